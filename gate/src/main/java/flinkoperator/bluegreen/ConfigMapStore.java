package flinkoperator.bluegreen;

import java.io.IOException;
import java.util.Map;

/** The gate's view of the ConfigMap: read it, and change it only by compare-and-set. */
interface ConfigMapStore {
    /**
     * @return the ConfigMap's {@code data} (empty when it has none)
     * @throws IOException when the map cannot be read, with a message that says why and what to do
     */
    Map<String, String> read() throws IOException;

    /**
     * Writes {@code entries} only if the map's {@code transition-id} is {@code transitionId} and
     * {@code data[key]} is {@code expected} ({@code null}: absent), retrying on write conflicts.
     *
     * @return refused (the map is missing or belongs to another transition), or the value {@code
     *     key} holds afterwards: the written one, or the one another writer stored first
     * @throws IOException on an error of the API, or when conflicts persist
     */
    CasResult cas(String transitionId, String key, String expected, Map<String, String> entries)
            throws IOException;

    /** A one-line description for log messages, e.g. the ConfigMap's namespace and name. */
    String describe();

    /** The outcome of {@link #cas}. */
    final class CasResult {
        private static final CasResult REFUSED = new CasResult(true, false, null);

        final boolean refused;
        /** Whether this call wrote the entries. */
        final boolean written;
        /** The value of the key afterwards (null when refused or when the key is absent). */
        final String value;

        private CasResult(boolean refused, boolean written, String value) {
            this.refused = refused;
            this.written = written;
            this.value = value;
        }

        static CasResult refused() {
            return REFUSED;
        }

        static CasResult written(String value) {
            return new CasResult(false, true, value);
        }

        static CasResult current(String value) {
            return new CasResult(false, false, value);
        }

        @Override
        public String toString() {
            return refused ? "refused" : (written ? "written " : "holds ") + value;
        }
    }
}
