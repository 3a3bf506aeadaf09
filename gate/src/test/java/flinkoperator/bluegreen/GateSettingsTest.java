package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

class GateSettingsTest {
    static Configuration child() {
        Configuration c = new Configuration();
        c.setString("bluegreen.configmap.name", "orders-bluegreen");
        c.setString("bluegreen.active-deployment-type", "green");
        c.setString("bluegreen.transition-id", "ab12");
        c.setString("kubernetes.namespace", "jobs");
        return c;
    }

    @Test
    void readsTheOperatorsKeys() {
        GateSettings s = GateSettings.from(child());
        assertEquals("orders-bluegreen", s.configMapName);
        assertEquals("GREEN", s.colour);
        assertEquals("ab12", s.transitionId);
        assertEquals("jobs", s.namespace);
        assertEquals(1_000L, s.pollIntervalMs);
        assertEquals(30_000L, s.idleTimeoutMs);
    }

    @Test
    void readsDurations() {
        Configuration c = child();
        c.setString("bluegreen.gate.poll-interval", "500 ms");
        c.setString("bluegreen.gate.idle-timeout", "PT45S");
        GateSettings s = GateSettings.from(c);
        assertEquals(500L, s.pollIntervalMs);
        assertEquals(45_000L, s.idleTimeoutMs);
        assertEquals(Duration.ofSeconds(30), GateSettings.parseDuration("30s"));
        assertEquals(Duration.ofSeconds(1), GateSettings.parseDuration("1 s"));
        assertEquals(Duration.ofMinutes(2), GateSettings.parseDuration("2 min"));
        assertEquals(Duration.ofMillis(250), GateSettings.parseDuration("250"));
        assertEquals(Duration.ofMillis(250), GateSettings.parseDuration("250ms"));
        assertEquals(Duration.ofHours(1), GateSettings.parseDuration("1 h"));
        assertThrows(IllegalArgumentException.class, () -> GateSettings.parseDuration("soon"));
        assertThrows(IllegalArgumentException.class, () -> GateSettings.parseDuration("5 fortnights"));
        c.setString("bluegreen.gate.idle-timeout", "x");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> GateSettings.from(c));
        assertTrue(e.getMessage().contains("bluegreen.gate.idle-timeout"), e.getMessage());
    }

    @Test
    void withoutTheKeysTheJobIsNoBlueGreenChild() {
        assertNull(GateSettings.from(new Configuration()));
    }

    @Test
    void someKeysWithoutTheOthersAreAnError() {
        Configuration c = new Configuration();
        c.setString("bluegreen.configmap.name", "orders-bluegreen");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> GateSettings.from(c));
        assertTrue(e.getMessage().contains("bluegreen.transition-id"), e.getMessage());
        Configuration purple = child();
        purple.setString("bluegreen.active-deployment-type", "PURPLE");
        assertThrows(IllegalArgumentException.class, () -> GateSettings.from(purple));
    }
}
