package flinkoperator.bluegreen;

import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Compare-and-set over a map that has a resource version, the way the Kubernetes API offers it:
 * read, check, then a write that the server refuses when the object changed since the read.
 * Subclasses only get and patch.
 */
abstract class VersionedConfigMapStore implements ConfigMapStore {
    static final int MAX_ATTEMPTS = 10;

    /** The map as read: its resource version and data. */
    static final class Versioned {
        final String resourceVersion;
        final Map<String, String> data;

        Versioned(String resourceVersion, Map<String, String> data) {
            this.resourceVersion = resourceVersion;
            this.data = Collections.unmodifiableMap(new LinkedHashMap<>(data));
        }
    }

    /** @return the map, or null when it does not exist */
    protected abstract Versioned get() throws IOException;

    /**
     * Merges {@code entries} into the map's data if its resource version is still {@code
     * resourceVersion}.
     *
     * @return false on a conflict (the map changed since), true once written
     */
    protected abstract boolean patch(String resourceVersion, Map<String, String> entries)
            throws IOException;

    /** The message of the error thrown by {@link #read} when the map does not exist. */
    protected abstract String missingMessage();

    @Override
    public Map<String, String> read() throws IOException {
        Versioned v = get();
        if (v == null) {
            throw new IOException(missingMessage());
        }
        return v.data;
    }

    @Override
    public CasResult cas(
            String transitionId, String key, String expected, Map<String, String> entries)
            throws IOException {
        Objects.requireNonNull(transitionId, "transitionId");
        for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            Versioned v = get();
            if (v == null || !transitionId.equals(v.data.get(GateState.KEY_TRANSITION_ID))) {
                return CasResult.refused();
            }
            String current = v.data.get(key);
            if (!Objects.equals(current, expected)) {
                return CasResult.current(current);
            }
            if (patch(v.resourceVersion, entries)) {
                Map<String, String> after = new LinkedHashMap<>(v.data);
                after.putAll(entries);
                return CasResult.written(after.get(key));
            }
        }
        throw new IOException(
                describe() + ": " + MAX_ATTEMPTS + " conflicting writes in a row while setting '"
                        + key + "'; giving up for now");
    }
}
