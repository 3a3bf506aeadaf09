package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import flinkoperator.bluegreen.GateState.Role;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class GateDecisionTest {
    static final long TOGGLE = 1_000L;
    static final long[] TIMES = {TOGGLE - 1, TOGGLE, TOGGLE + 1};

    /** The map during transition t2 from BLUE (created by t1) to GREEN (created by t2). */
    static Map<String, String> map(String stage, Long toggle) {
        Map<String, String> m = new HashMap<>();
        m.put("transition-id", "t2");
        m.put("stage", stage);
        if (stage.equals("RUNNING")) {
            m.put("active-deployment-type", "BLUE");
            m.put("active-transition-id", "t1");
            // A finished transition's leftovers must not matter.
            m.put("standby-deployment-type", "GREEN");
            m.put("standby-transition-id", "t2");
        } else {
            m.put("active-deployment-type", "GREEN");
            m.put("active-transition-id", "t2");
            m.put("standby-deployment-type", "BLUE");
            m.put("standby-transition-id", "t1");
        }
        m.put("deployment-deletion-delay-ms", "100");
        if (toggle != null) {
            m.put("watermark-toggle-value", Long.toString(toggle));
            m.put("watermark-stage", "WATERMARK_SET");
        }
        return m;
    }

    /** A state in which this child has {@code role}. */
    static GateState state(Role role, String stage, Long toggle) {
        Map<String, String> m = map(stage, toggle);
        boolean running = stage.equals("RUNNING");
        switch (role) {
            case ACTIVE:
                return running ? GateState.of(m, "BLUE", "t1") : GateState.of(m, "GREEN", "t2");
            case STANDBY:
                return running ? GateState.of(m, "GREEN", "t2") : GateState.of(m, "BLUE", "t1");
            default:
                // A stale GREEN of an earlier transition.
                return GateState.of(m, "GREEN", "t0");
        }
    }

    @ParameterizedTest(name = "{0} in {1}, toggle {2}, watermark {3} the toggle: {4}")
    @CsvSource({
            "ACTIVE, RUNNING, no, below, ++++",
            "ACTIVE, RUNNING, no, at, ++++",
            "ACTIVE, RUNNING, no, above, ++++",
            "ACTIVE, RUNNING, yes, below, -++-",
            "ACTIVE, RUNNING, yes, at, -++-",
            "ACTIVE, RUNNING, yes, above, ++++",
            "ACTIVE, INITIALIZING, no, below, ----",
            "ACTIVE, INITIALIZING, no, at, ----",
            "ACTIVE, INITIALIZING, no, above, ----",
            "ACTIVE, INITIALIZING, yes, below, ----",
            "ACTIVE, INITIALIZING, yes, at, ----",
            "ACTIVE, INITIALIZING, yes, above, ----",
            "ACTIVE, TRANSITIONING, no, below, ----",
            "ACTIVE, TRANSITIONING, no, at, ----",
            "ACTIVE, TRANSITIONING, no, above, ----",
            "ACTIVE, TRANSITIONING, yes, below, -++-",
            "ACTIVE, TRANSITIONING, yes, at, -++-",
            "ACTIVE, TRANSITIONING, yes, above, ++++",
            "STANDBY, RUNNING, no, below, ----",
            "STANDBY, RUNNING, no, at, ----",
            "STANDBY, RUNNING, no, above, ----",
            "STANDBY, RUNNING, yes, below, ----",
            "STANDBY, RUNNING, yes, at, ----",
            "STANDBY, RUNNING, yes, above, ----",
            "STANDBY, INITIALIZING, no, below, ++++",
            "STANDBY, INITIALIZING, no, at, ++++",
            "STANDBY, INITIALIZING, no, above, ++++",
            "STANDBY, INITIALIZING, yes, below, ++++",
            "STANDBY, INITIALIZING, yes, at, ++++",
            "STANDBY, INITIALIZING, yes, above, ++++",
            "STANDBY, TRANSITIONING, no, below, ++++",
            "STANDBY, TRANSITIONING, no, at, ++++",
            "STANDBY, TRANSITIONING, no, above, ++++",
            "STANDBY, TRANSITIONING, yes, below, +--+",
            "STANDBY, TRANSITIONING, yes, at, +--+",
            "STANDBY, TRANSITIONING, yes, above, ----",
            "RETIRED, RUNNING, no, below, ----",
            "RETIRED, RUNNING, no, at, ----",
            "RETIRED, RUNNING, no, above, ----",
            "RETIRED, RUNNING, yes, below, ----",
            "RETIRED, RUNNING, yes, at, ----",
            "RETIRED, RUNNING, yes, above, ----",
            "RETIRED, INITIALIZING, no, below, ----",
            "RETIRED, INITIALIZING, no, at, ----",
            "RETIRED, INITIALIZING, no, above, ----",
            "RETIRED, INITIALIZING, yes, below, ----",
            "RETIRED, INITIALIZING, yes, at, ----",
            "RETIRED, INITIALIZING, yes, above, ----",
            "RETIRED, TRANSITIONING, no, below, ----",
            "RETIRED, TRANSITIONING, no, at, ----",
            "RETIRED, TRANSITIONING, no, above, ----",
            "RETIRED, TRANSITIONING, yes, below, ----",
            "RETIRED, TRANSITIONING, yes, at, ----",
            "RETIRED, TRANSITIONING, yes, above, ----"
    })
    void table(Role role, String stage, String toggle, String wm, String expected) {
        GateState s = state(role, stage, toggle.equals("yes") ? TOGGLE : null);
        assertEquals(role, s.role);
        long watermark =
                wm.equals("below") ? TOGGLE - 500 : wm.equals("at") ? TOGGLE : TOGGLE + 1;
        StringBuilder got = new StringBuilder();
        for (long ts : TIMES) {
            got.append(GateDecision.passes(s, ts, watermark) ? '+' : '-');
        }
        got.append(GateDecision.passes(s, null, watermark) ? '+' : '-');
        assertEquals(expected, got.toString(), "ts below, at, above the toggle, and null");
    }

    @Test
    void rolesComeFromColourAndTransitionId() {
        Map<String, String> m = map("TRANSITIONING", null);
        assertEquals(Role.ACTIVE, GateState.of(m, "GREEN", "t2").role);
        assertEquals(Role.ACTIVE, GateState.of(m, "green", "t2").role);
        assertEquals(Role.STANDBY, GateState.of(m, "BLUE", "t1").role);
        assertEquals(Role.RETIRED, GateState.of(m, "GREEN", "t0").role);
        assertEquals(Role.RETIRED, GateState.of(m, "BLUE", "t2").role);
        assertEquals(Role.RETIRED, GateState.of(m, "BLUE", "t9").role);
    }

    @Test
    void retiredDropsEverythingWhateverTheState() {
        for (String stage : new String[] {"RUNNING", "INITIALIZING", "TRANSITIONING"}) {
            for (Long toggle : new Long[] {null, TOGGLE}) {
                GateState s = GateState.of(map(stage, toggle), "GREEN", "t0");
                assertEquals(Role.RETIRED, s.role);
                for (long wm : new long[] {Long.MIN_VALUE, 0, TOGGLE - 1, TOGGLE, TOGGLE + 1}) {
                    for (long ts : new long[] {Long.MIN_VALUE, 0, TOGGLE - 1, TOGGLE, TOGGLE + 1}) {
                        assertFalse(GateDecision.passes(s, ts, wm));
                    }
                    assertFalse(GateDecision.passes(s, null, wm));
                    assertFalse(GateDecision.wantsWaiting(s));
                    assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(s, wm));
                }
            }
        }
    }

    @Test
    void anAbortedJobNeverPassesEvenRightAfterTheAbort() {
        // GREEN (t2) is active and past the toggle: it passes everything.
        GateState during = GateState.of(map("TRANSITIONING", TOGGLE), "GREEN", "t2");
        assertTrue(GateDecision.passes(during, 5L, TOGGLE + 10));
        // The operator aborts: BLUE (t1) is the only child again, GREEN t2 is not named.
        Map<String, String> aborted = new HashMap<>();
        aborted.put("transition-id", "t2");
        aborted.put("stage", "RUNNING");
        aborted.put("active-deployment-type", "BLUE");
        aborted.put("active-transition-id", "t1");
        aborted.put("deployment-deletion-delay-ms", "100");
        GateState after = GateState.of(aborted, "GREEN", "t2");
        assertEquals(Role.RETIRED, after.role);
        // ...and a next transition t3 to GREEN: the old GREEN of t2 stays retired.
        Map<String, String> next = map("INITIALIZING", null);
        next.put("transition-id", "t3");
        next.put("active-transition-id", "t3");
        GateState afterNext = GateState.of(next, "GREEN", "t2");
        assertEquals(Role.RETIRED, afterNext.role);
        for (GateState s : new GateState[] {after, afterNext}) {
            for (long wm : new long[] {Long.MIN_VALUE, TOGGLE - 1, TOGGLE + 1, Long.MAX_VALUE}) {
                for (long ts : new long[] {Long.MIN_VALUE, TOGGLE - 1, TOGGLE, TOGGLE + 1}) {
                    assertFalse(GateDecision.passes(s, ts, wm));
                }
                assertFalse(GateDecision.passes(s, null, wm));
            }
        }
        // The survivor, BLUE t1, passes everything again.
        assertTrue(GateDecision.passes(GateState.of(aborted, "BLUE", "t1"), null, Long.MIN_VALUE));
    }

    @Test
    void unknownStageOrUnreadableValuesDrop() {
        Map<String, String> m = map("TRANSITIONING", null);
        m.put("stage", "SOMETHING_NEW");
        assertNotNull(GateState.of(m, "BLUE", "t1").problem);
        m = map("RUNNING", null);
        m.remove("stage");
        assertNotNull(GateState.of(m, "BLUE", "t1").problem);
        m = map("TRANSITIONING", null);
        m.put("watermark-toggle-value", "soon");
        assertNotNull(GateState.of(m, "BLUE", "t1").problem);
        m = map("TRANSITIONING", null);
        m.put("deployment-deletion-delay-ms", "-5");
        assertNotNull(GateState.of(m, "BLUE", "t1").problem);
        for (Map<String, String> bad : badMaps()) {
            for (String[] child : new String[][] {{"BLUE", "t1"}, {"GREEN", "t2"}}) {
                GateState s = GateState.of(bad, child[0], child[1]);
                assertNotNull(s.problem);
                assertFalse(GateDecision.passes(s, TOGGLE, TOGGLE + 1));
                assertFalse(GateDecision.passes(s, TOGGLE - 1, TOGGLE - 1));
                assertFalse(GateDecision.wantsWaiting(s));
                assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(s, TOGGLE));
            }
        }
        assertFalse(GateDecision.passes(GateState.of(null, "BLUE", "t1"), 1L, 1L));
    }

    private static Iterable<Map<String, String>> badMaps() {
        Map<String, String> a = map("TRANSITIONING", null);
        a.put("stage", "PAUSED");
        Map<String, String> b = map("TRANSITIONING", null);
        b.put("watermark-toggle-value", "12x");
        Map<String, String> c = map("RUNNING", null);
        c.put("deployment-deletion-delay-ms", "a while");
        return java.util.List.of(a, b, c);
    }

    @Test
    void theStandbyProposesOnlyWhenTheActiveWaitsAndItHasAWatermark() {
        Map<String, String> m = map("TRANSITIONING", null);
        GateState noWaiting = GateState.of(m, "BLUE", "t1");
        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(noWaiting, 5_000));

        m.put("watermark-stage", "WAITING_FOR_WATERMARK");
        GateState waiting = GateState.of(m, "BLUE", "t1");
        assertEquals(5_100L, GateDecision.proposal(waiting, 5_000));
        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(waiting, 0));
        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(waiting, -1));
        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(waiting, Long.MIN_VALUE));
        assertEquals(101L, GateDecision.proposal(waiting, 1));

        // Not once a toggle is set (the stored one is used), not in other stages.
        m.put("watermark-toggle-value", "3000");
        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(GateState.of(m, "BLUE", "t1"), 5_000));
        Map<String, String> init = map("INITIALIZING", null);
        init.put("watermark-stage", "WAITING_FOR_WATERMARK");
        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(GateState.of(init, "BLUE", "t1"), 5_000));
        m = map("TRANSITIONING", null);
        m.put("watermark-stage", "WATERMARK_SET");
        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(GateState.of(m, "BLUE", "t1"), 5_000));
        // No delay key: the proposal is the watermark itself.
        m = map("TRANSITIONING", null);
        m.put("watermark-stage", "WAITING_FOR_WATERMARK");
        m.remove("deployment-deletion-delay-ms");
        assertEquals(5_000L, GateDecision.proposal(GateState.of(m, "BLUE", "t1"), 5_000));
    }

    @Test
    void theActiveAsksForWaitingOnlyWhileTheWatermarkStageIsAbsent() {
        Map<String, String> m = map("TRANSITIONING", null);
        assertTrue(GateDecision.wantsWaiting(GateState.of(m, "GREEN", "t2")));
        m.put("watermark-stage", "WAITING_FOR_WATERMARK");
        assertFalse(GateDecision.wantsWaiting(GateState.of(m, "GREEN", "t2")));
        assertFalse(GateDecision.wantsWaiting(GateState.of(map("TRANSITIONING", TOGGLE), "GREEN", "t2")));
        assertFalse(GateDecision.wantsWaiting(GateState.of(map("INITIALIZING", null), "GREEN", "t2")));
    }

    @Test
    void eachSideWritesOnlyItsOwnTurn() {
        String[] wmStages = {null, "WAITING_FOR_WATERMARK", "WATERMARK_SET"};
        for (String stage : new String[] {"RUNNING", "INITIALIZING", "TRANSITIONING"}) {
            for (Long toggle : new Long[] {null, TOGGLE}) {
                for (String wmStage : wmStages) {
                    Map<String, String> m = map(stage, toggle);
                    if (wmStage == null) {
                        m.remove("watermark-stage");
                    } else {
                        m.put("watermark-stage", wmStage);
                    }
                    for (long wm : new long[] {Long.MIN_VALUE, 0, 1, TOGGLE, TOGGLE + 1}) {
                        GateState active = GateState.of(m, stage.equals("RUNNING") ? "BLUE" : "GREEN",
                                stage.equals("RUNNING") ? "t1" : "t2");
                        GateState standby = GateState.of(m, stage.equals("RUNNING") ? "GREEN" : "BLUE",
                                stage.equals("RUNNING") ? "t2" : "t1");
                        assertEquals(GateDecision.NO_PROPOSAL, GateDecision.proposal(active, wm),
                                "the ACTIVE never proposes a toggle");
                        assertFalse(GateDecision.wantsWaiting(standby),
                                "the STANDBY never asks for WAITING");
                    }
                }
            }
        }
    }

    @Test
    void handOverPastTheToggle() {
        long[] now = {10_000};
        HandOver h = new HandOver(30_000, () -> now[0]);
        assertEquals(0, h.value(), "no state yet");
        h.onState(state(Role.STANDBY, "TRANSITIONING", null));
        h.onRecord(TOGGLE + 50);
        assertEquals(0, h.value(), "no toggle");
        h.onState(state(Role.STANDBY, "TRANSITIONING", TOGGLE));
        assertEquals(1, h.value(), "the last watermark is past the toggle");
        h.onRecord(TOGGLE);
        assertEquals(0, h.value(), "at the toggle is not past it");
        h.onRecord(TOGGLE + 1);
        assertEquals(1, h.value());
        // Only a STANDBY in TRANSITIONING hands over.
        h.onState(state(Role.ACTIVE, "TRANSITIONING", TOGGLE));
        assertEquals(0, h.value());
        h.onState(state(Role.STANDBY, "RUNNING", TOGGLE));
        assertEquals(0, h.value());
        h.onState(state(Role.RETIRED, "TRANSITIONING", TOGGLE));
        assertEquals(0, h.value());
    }

    @Test
    void handOverOfAnIdleSubtask() {
        long[] now = {10_000};
        HandOver h = new HandOver(30_000, () -> now[0]);
        h.onRecord(500);
        now[0] = 20_000;
        h.onState(state(Role.STANDBY, "TRANSITIONING", TOGGLE)); // learned at 20 000
        now[0] = 49_999;
        assertEquals(0, h.value());
        now[0] = 50_000;
        assertEquals(1, h.value(), "idle for 30 s since it learned the toggle");
        h.onRecord(600); // a record below the toggle at 50 000
        assertEquals(0, h.value());
        now[0] = 79_999;
        assertEquals(0, h.value());
        now[0] = 80_000;
        assertEquals(1, h.value(), "idle for 30 s since its last record");
        // The same toggle read again does not restart the clock.
        h.onState(state(Role.STANDBY, "TRANSITIONING", TOGGLE));
        assertEquals(1, h.value());
        // No toggle: reset.
        h.onState(state(Role.STANDBY, "TRANSITIONING", null));
        assertEquals(0, h.value());
        now[0] = 200_000;
        assertEquals(0, h.value());
        // A toggle learned again starts a new idle period.
        h.onState(state(Role.STANDBY, "TRANSITIONING", TOGGLE));
        assertEquals(0, h.value());
        now[0] = 230_000;
        assertEquals(1, h.value());
    }

    @Test
    void stateToString() {
        assertNull(state(Role.STANDBY, "TRANSITIONING", null).toggle);
        assertTrue(state(Role.STANDBY, "TRANSITIONING", TOGGLE).toString().contains("toggle 1000"));
    }
}
