package flinkoperator.bluegreen;

import flinkoperator.bluegreen.GateState.Role;
import flinkoperator.bluegreen.GateState.Stage;

/**
 * The gate's rules, free of Flink and of I/O: from a {@link GateState}, a record's event time and
 * the subtask's watermark, whether the record passes and which write the subtask wants.
 */
final class GateDecision {
    private GateDecision() {}

    /** Returned by {@link #proposal} when the subtask proposes no toggle. */
    static final long NO_PROPOSAL = Long.MIN_VALUE;

    /** How a subtask treats records while a state and watermark hold. */
    enum Mode {
        DROP_ALL("dropping every record"),
        PASS_ALL("passing every record"),
        PASS_AT_OR_AFTER_TOGGLE(
                "passing records at or after the toggle until the watermark passes it"),
        PASS_BEFORE_TOGGLE("passing records before the toggle until the watermark passes it");

        final String description;

        Mode(String description) {
            this.description = description;
        }
    }

    static Mode mode(GateState s, long watermark) {
        if (s.problem != null || s.stage == null || s.role == Role.RETIRED) {
            return Mode.DROP_ALL;
        }
        boolean active = s.role == Role.ACTIVE;
        switch (s.stage) {
            case RUNNING:
                if (!active) {
                    return Mode.DROP_ALL;
                }
                // A toggle in RUNNING is the one the finished transition handed over at: the old
                // job wrote what lies before it, and the new job may not have reached it yet
                // (its watermark can trail the old one's when the operator ends the transition).
                if (s.hasToggle() && watermark <= s.toggleValue) {
                    return Mode.PASS_AT_OR_AFTER_TOGGLE;
                }
                return Mode.PASS_ALL;
            case INITIALIZING:
                return active ? Mode.DROP_ALL : Mode.PASS_ALL;
            case TRANSITIONING:
                if (!s.hasToggle()) {
                    return active ? Mode.DROP_ALL : Mode.PASS_ALL;
                }
                if (watermark > s.toggleValue) {
                    return active ? Mode.PASS_ALL : Mode.DROP_ALL;
                }
                return active ? Mode.PASS_AT_OR_AFTER_TOGGLE : Mode.PASS_BEFORE_TOGGLE;
            default:
                return Mode.DROP_ALL;
        }
    }

    /**
     * @param eventTime the record's event time; null counts as older than any toggle
     */
    static boolean passes(GateState s, Long eventTime, long watermark) {
        return passes(mode(s, watermark), s, eventTime == null ? Long.MIN_VALUE : eventTime);
    }

    static boolean passes(Mode mode, GateState s, long eventTime) {
        switch (mode) {
            case PASS_ALL:
                return true;
            case PASS_AT_OR_AFTER_TOGGLE:
                return eventTime >= s.toggleValue;
            case PASS_BEFORE_TOGGLE:
                return eventTime < s.toggleValue;
            default:
                return false;
        }
    }

    /**
     * The ACTIVE side's turn: in TRANSITIONING without a toggle it asks for {@code
     * watermark-stage: absent -> WAITING_FOR_WATERMARK}.
     */
    static boolean wantsWaiting(GateState s) {
        return s.problem == null
                && s.role == Role.ACTIVE
                && s.stage == Stage.TRANSITIONING
                && !s.hasToggle()
                && s.watermarkStage == null;
    }

    /**
     * The STANDBY side's turn: in TRANSITIONING without a toggle, once the ACTIVE side waits and
     * the subtask has a watermark, it proposes the toggle {@code watermark + delay}.
     *
     * @return the proposed toggle, or {@link #NO_PROPOSAL}
     */
    static long proposal(GateState s, long watermark) {
        if (s.problem == null
                && s.role == Role.STANDBY
                && s.stage == Stage.TRANSITIONING
                && !s.hasToggle()
                && GateState.WAITING_FOR_WATERMARK.equals(s.watermarkStage)
                && watermark > 0) {
            long value = watermark + s.deletionDelayMs;
            return value < watermark ? Long.MAX_VALUE : value;
        }
        return NO_PROPOSAL;
    }
}
