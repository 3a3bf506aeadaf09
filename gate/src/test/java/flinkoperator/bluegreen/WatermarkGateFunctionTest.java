package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.InstantiationUtil;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.ProcessFunctionTestHarnesses;
import org.junit.jupiter.api.Test;

/** The function in Flink's operator test harness, with an in-memory ConfigMap. */
class WatermarkGateFunctionTest {
    /** Stores by name, for the (serializable) store factory. */
    static final Map<String, InMemoryConfigMapStore> STORES = new ConcurrentHashMap<>();

    static WatermarkGateFunction<Long> gate(String storeName, String colour, String transition) {
        GateSettings s =
                new GateSettings(storeName, colour, transition, "jobs",
                        Duration.ofMillis(5), Duration.ofSeconds(30));
        return new WatermarkGateFunction<>(s, r -> r, (ns, name) -> STORES.get(name));
    }

    static Map<String, String> transitioning() {
        Map<String, String> m = new HashMap<>();
        m.put("transition-id", "t2");
        m.put("stage", "TRANSITIONING");
        m.put("active-deployment-type", "GREEN");
        m.put("active-transition-id", "t2");
        m.put("standby-deployment-type", "BLUE");
        m.put("standby-transition-id", "t1");
        m.put("deployment-deletion-delay-ms", "0");
        return m;
    }

    static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out");
            Thread.sleep(5);
        }
    }

    @Test
    void applyAddsANamedGateOfTheStreamsType() {
        Configuration conf = new Configuration();
        conf.setString("bluegreen.configmap.name", "orders-bluegreen");
        conf.setString("bluegreen.active-deployment-type", "BLUE");
        conf.setString("bluegreen.transition-id", "t1");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        DataStream<Long> in = env.fromData(1L, 2L);
        DataStream<Long> gated = WatermarkGate.apply(in, env.getConfiguration(), r -> r);
        assertEquals("bluegreen-gate", gated.getTransformation().getName());
        assertEquals("bluegreen-gate", gated.getTransformation().getUid());
        assertEquals(in.getType(), gated.getType());
    }

    @Test
    void theFunctionSerializesAsFlinkShipsIt() throws Exception {
        Configuration conf = new Configuration();
        conf.setString("bluegreen.configmap.name", "orders-bluegreen");
        conf.setString("bluegreen.active-deployment-type", "GREEN");
        conf.setString("bluegreen.transition-id", "t2");
        conf.setString("bluegreen.gate.poll-interval", "250 ms");
        WatermarkGateFunction<Long> fn = WatermarkGate.create(conf, r -> r);
        byte[] bytes = InstantiationUtil.serializeObject(fn);
        Object copy = InstantiationUtil.deserializeObject(bytes, getClass().getClassLoader());
        assertTrue(copy instanceof WatermarkGateFunction);
    }

    @Test
    void withoutBlueGreenKeysEverythingPasses() throws Exception {
        WatermarkGateFunction<Long> fn = WatermarkGate.create(new Configuration(), r -> r);
        try (OneInputStreamOperatorTestHarness<Long, Long> h =
                ProcessFunctionTestHarnesses.forProcessFunction(fn)) {
            h.processElement(1L, 1L);
            h.processElement(2L, 2L);
            assertEquals(List.of(1L, 2L), h.extractOutputValues());
        }
    }

    @Test
    void bothJobsThroughTheHandOver() throws Exception {
        InMemoryConfigMapStore store = new InMemoryConfigMapStore(transitioning());
        STORES.put("handover", store);
        WatermarkGateFunction<Long> blueFn = gate("handover", "BLUE", "t1");
        WatermarkGateFunction<Long> greenFn = gate("handover", "GREEN", "t2");
        try (OneInputStreamOperatorTestHarness<Long, Long> blue =
                        ProcessFunctionTestHarnesses.forProcessFunction(blueFn);
                OneInputStreamOperatorTestHarness<Long, Long> green =
                        ProcessFunctionTestHarnesses.forProcessFunction(greenFn)) {
            // No toggle yet: the old job writes everything, the new one nothing.
            blue.processElement(100L, 100L);
            green.processElement(100L, 100L);
            assertEquals(List.of(100L), blue.extractOutputValues());
            assertEquals(List.of(), green.extractOutputValues());

            // The new job's gate asks for the cutover; the old one proposes its watermark.
            waitFor(() -> "WAITING_FOR_WATERMARK".equals(store.snapshot().get("watermark-stage")));
            blue.processWatermark(1_000L);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (store.snapshot().get("watermark-toggle-value") == null) {
                assertTrue(System.nanoTime() < deadline, "no toggle");
                blue.processElement(900L, 900L);
                Thread.sleep(5);
            }
            assertEquals("1000", store.snapshot().get("watermark-toggle-value"));
            assertEquals("WATERMARK_SET", store.snapshot().get("watermark-stage"));

            // Records 999, 1000 and 1001 go to exactly one job each.
            waitFor(() -> blueFn.currentState().hasToggle() && greenFn.currentState().hasToggle());
            int blueBefore = blue.extractOutputValues().size();
            int greenBefore = green.extractOutputValues().size();
            for (long ts : new long[] {999L, 1_000L, 1_001L}) {
                blue.processElement(ts, ts);
                green.processElement(ts, ts);
            }
            List<Long> blueOut = blue.extractOutputValues();
            List<Long> greenOut = green.extractOutputValues();
            assertEquals(List.of(999L), blueOut.subList(blueBefore, blueOut.size()));
            assertEquals(List.of(1_000L, 1_001L), greenOut.subList(greenBefore, greenOut.size()));

            // Past the toggle the new job writes everything and the old one nothing.
            blue.processWatermark(1_001L);
            green.processWatermark(1_001L);
            blue.processElement(5L, 5L);
            green.processElement(5L, 5L);
            assertEquals(blueOut.size(), blue.extractOutputValues().size());
            assertTrue(green.extractOutputValues().contains(5L));
        } finally {
            STORES.remove("handover");
        }
    }

    @Test
    void aMissingConfigMapFailsTheOpenWithAClearMessage() throws Exception {
        STORES.put("gone", new InMemoryConfigMapStore(null));
        try {
            Exception e =
                    assertThrows(
                            Exception.class,
                            () -> {
                                try (OneInputStreamOperatorTestHarness<Long, Long> h =
                                        ProcessFunctionTestHarnesses.forProcessFunction(
                                                gate("gone", "BLUE", "t1"))) {
                                    h.processElement(1L, 1L);
                                }
                            });
            Throwable t = e;
            while (t != null && !(t instanceof IllegalStateException)) {
                t = t.getCause();
            }
            assertTrue(t != null && t.getMessage().contains("cannot read the ConfigMap jobs/gone")
                    && t.getMessage().contains("does not exist"), String.valueOf(e));
        } finally {
            STORES.remove("gone");
        }
    }
}
