package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import flinkoperator.bluegreen.GateState.Role;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Both sides of a transition through one in-memory ConfigMap, the operator played by the test. */
class GateRuntimeTest {
    final long[] now = {1_000_000L};

    static GateSettings settings(String colour, String transition, long pollMs) {
        return new GateSettings(
                "orders-bluegreen", colour, transition, "jobs",
                Duration.ofMillis(pollMs), Duration.ofSeconds(30));
    }

    GateRuntime runtime(InMemoryConfigMapStore store, String colour, String transition, int i)
            throws IOException {
        GateRuntime rt =
                new GateRuntime(settings(colour, transition, 1_000), store,
                        "gate " + i + " of " + colour, () -> now[0]);
        rt.init();
        return rt;
    }

    static InMemoryConfigMapStore initializing() {
        Map<String, String> m = new HashMap<>();
        m.put("transition-id", "t2");
        m.put("stage", "INITIALIZING");
        m.put("active-deployment-type", "GREEN");
        m.put("active-transition-id", "t2");
        m.put("standby-deployment-type", "BLUE");
        m.put("standby-transition-id", "t1");
        m.put("deployment-deletion-delay-ms", "100");
        return new InMemoryConfigMapStore(m);
    }

    @Test
    void aWholeHandOver() throws IOException {
        InMemoryConfigMapStore store = initializing();
        GateRuntime green = runtime(store, "GREEN", "t2", 1);
        GateRuntime blue1 = runtime(store, "BLUE", "t1", 1);
        GateRuntime blue2 = runtime(store, "BLUE", "t1", 2);

        // INITIALIZING: the old job writes, the new one does not.
        assertTrue(blue1.decide(10L, 5));
        assertFalse(green.decide(10L, 5));

        store.merge(Map.of("stage", "TRANSITIONING"));
        for (GateRuntime rt : new GateRuntime[] {green, blue1, blue2}) {
            rt.pollOnce();
        }
        // The new job waits for a toggle; the old one keeps writing but proposes nothing yet.
        assertFalse(green.decide(4_000L, 3_000));
        assertTrue(blue1.decide(4_000L, 5_000));
        green.pollOnce();
        assertEquals("WAITING_FOR_WATERMARK", store.snapshot().get("watermark-stage"));
        assertNull(store.snapshot().get("watermark-toggle-value"), "the ACTIVE writes no toggle");

        // Two standby subtasks propose different toggles; the first write wins.
        blue1.pollOnce();
        blue2.pollOnce();
        assertTrue(blue1.decide(5_000L, 5_000)); // proposes 5 100
        assertTrue(blue2.decide(3_000L, 4_000)); // proposes 4 100
        blue2.pollOnce();
        assertEquals("4100", store.snapshot().get("watermark-toggle-value"));
        assertEquals("WATERMARK_SET", store.snapshot().get("watermark-stage"));
        blue1.pollOnce();
        assertEquals("4100", store.snapshot().get("watermark-toggle-value"));
        assertEquals(4_100L, blue1.state().toggle, "the stored toggle, not its own proposal");
        assertEquals(4_100L, blue2.state().toggle);
        green.pollOnce();
        assertEquals(4_100L, green.state().toggle);

        // The old job writes what is before the toggle until its watermark passes it.
        assertTrue(blue2.decide(4_099L, 4_050));
        assertFalse(blue2.decide(4_100L, 4_050));
        assertTrue(blue2.decide(null, 4_050));
        assertEquals(0, blue2.handOverDone());
        assertFalse(blue2.decide(4_000L, 4_101));
        assertEquals(1, blue2.handOverDone());
        // blue1's watermark is past the toggle already: it drops all and is done.
        assertFalse(blue1.decide(100L, 5_200));
        assertEquals(1, blue1.handOverDone());
        // The new job writes what is at or after the toggle, then everything.
        assertFalse(green.decide(4_099L, 4_000));
        assertTrue(green.decide(4_100L, 4_000));
        assertFalse(green.decide(null, 4_000));
        assertTrue(green.decide(1L, 4_101));
        assertTrue(green.decide(null, 4_101));
        assertEquals(0, green.handOverDone(), "the gauge is the standby's");

        // The operator ends the transition: only GREEN writes. The toggle stays for it: a
        // subtask whose watermark has not passed it yet still leaves what is before it to the
        // old job, which wrote it.
        store.merge(Map.of("stage", "RUNNING"));
        green.pollOnce();
        blue1.pollOnce();
        assertFalse(green.decide(4_099L, 4_000));
        assertTrue(green.decide(4_100L, 4_000));
        assertTrue(green.decide(1L, 4_102));
        assertFalse(blue1.decide(1L, 1));
        assertEquals(0, blue1.handOverDone());
    }

    @Test
    void anIdleStandbySubtaskHandsOverAfterTheIdleTimeout() throws IOException {
        InMemoryConfigMapStore store = initializing();
        store.merge(Map.of("stage", "TRANSITIONING", "watermark-stage", "WATERMARK_SET",
                "watermark-toggle-value", "4100"));
        GateRuntime idle = runtime(store, "BLUE", "t1", 3);
        assertEquals(0, idle.handOverDone());
        now[0] += 29_999;
        assertEquals(0, idle.handOverDone());
        now[0] += 1;
        assertEquals(1, idle.handOverDone());
    }

    @Test
    void aRefusedWriteForAnEndedTransitionChangesNothing() throws IOException {
        InMemoryConfigMapStore store = initializing();
        store.merge(Map.of("stage", "TRANSITIONING"));
        GateRuntime green = runtime(store, "GREEN", "t2", 1);
        assertFalse(green.decide(1L, 1)); // wants WAITING for t2
        // The operator aborts t2 before the poller writes, and starts t3.
        Map<String, String> m = new HashMap<>(store.snapshot());
        m.put("transition-id", "t3");
        m.put("stage", "INITIALIZING");
        m.put("active-transition-id", "t3");
        store.replace(m);
        // The poller reads first, so the retired gate drops at once; the write is refused.
        green.pollOnce();
        assertNull(store.snapshot().get("watermark-stage"));
        assertEquals(Role.RETIRED, green.state().role);
        assertFalse(green.decide(1L, 10_000));
    }

    @Test
    void readErrorsKeepTheLastState() throws IOException {
        InMemoryConfigMapStore store = initializing();
        GateRuntime blue = runtime(store, "BLUE", "t1", 1);
        store.failReads = new IllegalStateException("API server down");
        blue.pollOnce();
        assertTrue(blue.decide(1L, 1), "still INITIALIZING as last read");
    }

    @Test
    void theFirstReadFailsLoudly() {
        InMemoryConfigMapStore gone = new InMemoryConfigMapStore(null);
        GateRuntime rt =
                new GateRuntime(settings("BLUE", "t1", 1_000), gone, "gate", () -> now[0]);
        IOException e = assertThrows(IOException.class, () -> rt.start("poller"));
        assertTrue(e.getMessage().contains("does not exist"));
    }

    @Test
    void thePollersFindAToggleOnTheirOwn() throws Exception {
        InMemoryConfigMapStore store = initializing();
        store.merge(Map.of("stage", "TRANSITIONING"));
        GateRuntime green =
                new GateRuntime(settings("GREEN", "t2", 5), store, "green", System::currentTimeMillis);
        GateRuntime blue =
                new GateRuntime(settings("BLUE", "t1", 5), store, "blue", System::currentTimeMillis);
        green.start("green-poller");
        blue.start("blue-poller");
        try {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (store.snapshot().get("watermark-toggle-value") == null
                    && System.nanoTime() < deadline) {
                green.decide(1_000L, 900);
                blue.decide(1_000L, 2_000);
                Thread.sleep(2);
            }
            assertEquals("2100", store.snapshot().get("watermark-toggle-value"));
            while ((green.state().toggle == null || blue.state().toggle == null)
                    && System.nanoTime() < deadline) {
                Thread.sleep(2);
            }
            assertEquals(2_100L, green.state().toggle);
            assertEquals(2_100L, blue.state().toggle);
        } finally {
            green.close();
            blue.close();
        }
    }
}
