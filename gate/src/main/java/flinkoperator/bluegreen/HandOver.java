package flinkoperator.bluegreen;

import flinkoperator.bluegreen.GateState.Role;
import flinkoperator.bluegreen.GateState.Stage;
import java.util.function.LongSupplier;

/**
 * The value of the gauge {@code bluegreenGateHandOverDone} for one subtask: 1 once a STANDBY
 * subtask has nothing left to write (its watermark passed the toggle, or it has been idle for the
 * idle timeout since it learned the toggle and since its last record), else 0.
 *
 * <p>Written by the processing thread ({@link #onRecord}) and the poller ({@link #onState}), read
 * by the metrics thread ({@link #value}): every field is volatile.
 */
final class HandOver {
    private static final long NEVER = Long.MIN_VALUE;

    private final long idleTimeoutMs;
    private final LongSupplier clock;

    private volatile GateState state;
    private volatile long lastWatermark = Long.MIN_VALUE;
    private volatile long lastRecordAt = NEVER;
    private volatile long toggleLearnedAt = NEVER;
    private volatile Long learnedToggle;

    HandOver(long idleTimeoutMs, LongSupplier clock) {
        this.idleTimeoutMs = idleTimeoutMs;
        this.clock = clock;
    }

    /** The processing thread saw a record while the subtask's watermark was {@code watermark}. */
    void onRecord(long watermark) {
        lastWatermark = watermark;
        lastRecordAt = clock.getAsLong();
    }

    /** A new state was published. */
    void onState(GateState s) {
        Long toggle = s.toggle;
        if (toggle == null) {
            learnedToggle = null;
            toggleLearnedAt = NEVER;
        } else if (!toggle.equals(learnedToggle)) {
            learnedToggle = toggle;
            toggleLearnedAt = clock.getAsLong();
        }
        state = s;
    }

    int value() {
        GateState s = state;
        if (s == null
                || s.problem != null
                || s.role != Role.STANDBY
                || s.stage != Stage.TRANSITIONING
                || !s.hasToggle()) {
            return 0;
        }
        if (lastWatermark > s.toggleValue) {
            return 1;
        }
        long learned = toggleLearnedAt;
        if (learned == NEVER) {
            return 0;
        }
        long since = Math.max(learned, lastRecordAt);
        return clock.getAsLong() - since >= idleTimeoutMs ? 1 : 0;
    }
}
