package flinkoperator.bluegreen;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A ConfigMap in memory with the API server's resource version rules: every write bumps the
 * version, and a patch naming an older version is a conflict.
 */
final class InMemoryConfigMapStore extends VersionedConfigMapStore {
    private Map<String, String> data; // null: the map does not exist
    private long resourceVersion;

    final AtomicInteger gets = new AtomicInteger();
    final AtomicInteger patches = new AtomicInteger();
    final AtomicInteger conflicts = new AtomicInteger();

    /** Runs between a CAS's read and its patch (tests use it to force conflicts). */
    volatile Runnable betweenReadAndPatch = () -> {};

    /** A failure to throw from the next reads, or null. */
    volatile RuntimeException failReads;

    InMemoryConfigMapStore(Map<String, String> initial) {
        this.data = initial == null ? null : new LinkedHashMap<>(initial);
        this.resourceVersion = 1;
    }

    /** The operator's write: replaces the whole data. */
    synchronized void replace(Map<String, String> newData) {
        data = newData == null ? null : new LinkedHashMap<>(newData);
        resourceVersion++;
    }

    /** The operator's write: merges entries (a null value removes the key). */
    synchronized void merge(Map<String, String> entries) {
        for (Map.Entry<String, String> e : entries.entrySet()) {
            if (e.getValue() == null) {
                data.remove(e.getKey());
            } else {
                data.put(e.getKey(), e.getValue());
            }
        }
        resourceVersion++;
    }

    synchronized Map<String, String> snapshot() {
        return data == null ? null : new HashMap<>(data);
    }

    @Override
    protected Versioned get() {
        RuntimeException fail = failReads;
        if (fail != null) {
            throw fail;
        }
        gets.incrementAndGet();
        Versioned v;
        synchronized (this) {
            v = data == null ? null : new Versioned(Long.toString(resourceVersion), data);
        }
        if (v != null) {
            betweenReadAndPatch.run();
        }
        return v;
    }

    @Override
    protected synchronized boolean patch(String rv, Map<String, String> entries) {
        patches.incrementAndGet();
        if (data == null || !Long.toString(resourceVersion).equals(rv)) {
            conflicts.incrementAndGet();
            return false;
        }
        data.putAll(entries);
        resourceVersion++;
        return true;
    }

    @Override
    protected String missingMessage() {
        return "the ConfigMap does not exist";
    }

    @Override
    public String describe() {
        return "in-memory ConfigMap";
    }
}
