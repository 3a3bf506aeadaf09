package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import flinkoperator.bluegreen.ConfigMapStore.CasResult;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class StoreCasTest {
    static final String KEY = GateState.KEY_TOGGLE;

    static InMemoryConfigMapStore store() {
        Map<String, String> m = new HashMap<>();
        m.put("transition-id", "t2");
        m.put("stage", "TRANSITIONING");
        m.put("watermark-stage", "WAITING_FOR_WATERMARK");
        return new InMemoryConfigMapStore(m);
    }

    static Map<String, String> toggle(long value) {
        Map<String, String> e = new HashMap<>();
        e.put(KEY, Long.toString(value));
        e.put("watermark-stage", "WATERMARK_SET");
        return e;
    }

    @Test
    void firstWriteWins() throws IOException {
        InMemoryConfigMapStore s = store();
        CasResult first = s.cas("t2", KEY, null, toggle(100));
        assertTrue(first.written);
        assertEquals("100", first.value);
        CasResult second = s.cas("t2", KEY, null, toggle(200));
        assertFalse(second.written);
        assertFalse(second.refused);
        assertEquals("100", second.value);
        assertEquals("100", s.snapshot().get(KEY));
        assertEquals("WATERMARK_SET", s.snapshot().get("watermark-stage"));
    }

    @Test
    void aWriterThatReadBeforeTheWinnerAdoptsTheStoredValue() throws IOException {
        InMemoryConfigMapStore s = store();
        // Between this writer's read and its patch, another writer stores 100.
        s.betweenReadAndPatch =
                () -> {
                    s.betweenReadAndPatch = () -> {};
                    s.merge(toggle(100));
                };
        CasResult r = s.cas("t2", KEY, null, toggle(200));
        assertFalse(r.written);
        assertEquals("100", r.value);
        assertEquals(1, s.conflicts.get(), "the stale patch was a conflict");
        assertEquals("100", s.snapshot().get(KEY));
    }

    @Test
    void aWriteForAnotherTransitionIsRefused() throws IOException {
        InMemoryConfigMapStore s = store();
        CasResult r = s.cas("t1", KEY, null, toggle(100));
        assertTrue(r.refused);
        assertNull(s.snapshot().get(KEY));
        assertEquals(0, s.patches.get());
        // Nor is anything written to a missing map.
        InMemoryConfigMapStore gone = new InMemoryConfigMapStore(null);
        assertTrue(gone.cas("t2", KEY, null, toggle(100)).refused);
        assertThrows(IOException.class, gone::read);
    }

    @Test
    void theTransitionChangingBetweenReadAndPatchIsRefused() throws IOException {
        InMemoryConfigMapStore s = store();
        s.betweenReadAndPatch =
                () -> {
                    s.betweenReadAndPatch = () -> {};
                    Map<String, String> e = new HashMap<>();
                    e.put("transition-id", "t3");
                    s.merge(e);
                };
        assertTrue(s.cas("t2", KEY, null, toggle(100)).refused);
        assertNull(s.snapshot().get(KEY));
    }

    @Test
    void persistentConflictsGiveUpWithAnError() {
        InMemoryConfigMapStore s = store();
        Map<String, String> unrelated = new HashMap<>();
        s.betweenReadAndPatch =
                () -> {
                    unrelated.put("other", Integer.toString(unrelated.size()));
                    s.merge(unrelated);
                };
        IOException e = assertThrows(IOException.class, () -> s.cas("t2", KEY, null, toggle(1)));
        assertTrue(e.getMessage().contains("10 conflicting writes"), e.getMessage());
        assertEquals(VersionedConfigMapStore.MAX_ATTEMPTS, s.patches.get());
        assertNull(s.snapshot().get(KEY));
    }

    @Test
    void concurrentWritersEndWithExactlyOneToggle() throws Exception {
        for (int round = 0; round < 20; round++) {
            InMemoryConfigMapStore s = store();
            s.betweenReadAndPatch = Thread::yield;
            int writers = 8;
            ExecutorService pool = Executors.newFixedThreadPool(writers);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<CasResult>> results = new ArrayList<>();
            for (int i = 0; i < writers; i++) {
                long proposal = 1_000L + i;
                results.add(
                        pool.submit(
                                () -> {
                                    go.await();
                                    return s.cas("t2", KEY, null, toggle(proposal));
                                }));
            }
            go.countDown();
            Set<String> values = new HashSet<>();
            int written = 0;
            for (Future<CasResult> f : results) {
                CasResult r = f.get(10, TimeUnit.SECONDS);
                assertFalse(r.refused);
                values.add(r.value);
                written += r.written ? 1 : 0;
            }
            pool.shutdown();
            assertEquals(1, written, "exactly one writer wrote");
            assertEquals(1, values.size(), "every writer returns the same toggle: " + values);
            assertEquals(values.iterator().next(), s.snapshot().get(KEY));
        }
    }
}
