package flinkoperator.bluegreen;

import java.util.Map;

/**
 * One immutable reading of the ConfigMap, seen from one child (its colour and transition id). The
 * poller publishes a new one after each read; the processing thread decides from the one it sees.
 */
final class GateState {
    static final String KEY_TRANSITION_ID = "transition-id";
    static final String KEY_STAGE = "stage";
    static final String KEY_ACTIVE_TYPE = "active-deployment-type";
    static final String KEY_ACTIVE_TRANSITION = "active-transition-id";
    static final String KEY_STANDBY_TYPE = "standby-deployment-type";
    static final String KEY_STANDBY_TRANSITION = "standby-transition-id";
    static final String KEY_DELETION_DELAY = "deployment-deletion-delay-ms";
    static final String KEY_WATERMARK_STAGE = "watermark-stage";
    static final String KEY_TOGGLE = "watermark-toggle-value";

    static final String WAITING_FOR_WATERMARK = "WAITING_FOR_WATERMARK";
    static final String WATERMARK_SET = "WATERMARK_SET";

    enum Role {
        ACTIVE,
        STANDBY,
        RETIRED
    }

    enum Stage {
        INITIALIZING,
        TRANSITIONING,
        RUNNING
    }

    /** The map's {@code transition-id}: the id every write of the gate names. May be null. */
    final String mapTransitionId;

    final Role role;
    /** Null when {@link #problem} is set. */
    final Stage stage;
    /** Null when no toggle is set. */
    final Long toggle;
    /** The toggle as a primitive, valid only when {@link #toggle} is not null. */
    final long toggleValue;

    final String watermarkStage;
    final long deletionDelayMs;
    /** Non-null when the map cannot be used (no stage, an unknown stage, a malformed number). */
    final String problem;

    private GateState(
            String mapTransitionId,
            Role role,
            Stage stage,
            Long toggle,
            String watermarkStage,
            long deletionDelayMs,
            String problem) {
        this.mapTransitionId = mapTransitionId;
        this.role = role;
        this.stage = stage;
        this.toggle = toggle;
        this.toggleValue = toggle == null ? 0L : toggle;
        this.watermarkStage = watermarkStage;
        this.deletionDelayMs = deletionDelayMs;
        this.problem = problem;
    }

    boolean hasToggle() {
        return toggle != null;
    }

    /** A state that drops everything, for a map that is gone or unreadable. */
    static GateState unusable(String problem) {
        return new GateState(null, Role.RETIRED, null, null, null, 0L, problem);
    }

    /**
     * Reads the ConfigMap's data as seen by the child of colour {@code colour} created by
     * transition {@code transitionId}.
     */
    static GateState of(Map<String, String> data, String colour, String transitionId) {
        if (data == null) {
            return unusable("the ConfigMap has no data");
        }
        String mapTransition = data.get(KEY_TRANSITION_ID);
        Role role;
        if (same(colour, data.get(KEY_ACTIVE_TYPE))
                && transitionId.equals(data.get(KEY_ACTIVE_TRANSITION))) {
            role = Role.ACTIVE;
        } else if (same(colour, data.get(KEY_STANDBY_TYPE))
                && transitionId.equals(data.get(KEY_STANDBY_TRANSITION))) {
            role = Role.STANDBY;
        } else {
            role = Role.RETIRED;
        }
        String stageText = data.get(KEY_STAGE);
        Stage stage = null;
        String problem = null;
        if (stageText == null) {
            problem = "the ConfigMap has no '" + KEY_STAGE + "'";
        } else {
            try {
                stage = Stage.valueOf(stageText.trim());
            } catch (IllegalArgumentException e) {
                problem = "unknown stage '" + stageText + "'";
            }
        }
        Long toggle = null;
        String toggleText = data.get(KEY_TOGGLE);
        if (toggleText != null && !toggleText.trim().isEmpty()) {
            try {
                toggle = Long.parseLong(toggleText.trim());
            } catch (NumberFormatException e) {
                problem = "'" + KEY_TOGGLE + "' is not a number: '" + toggleText + "'";
            }
        }
        long delay = 0L;
        String delayText = data.get(KEY_DELETION_DELAY);
        if (delayText != null && !delayText.trim().isEmpty()) {
            try {
                delay = Long.parseLong(delayText.trim());
                if (delay < 0) {
                    problem = "'" + KEY_DELETION_DELAY + "' is negative: " + delay;
                }
            } catch (NumberFormatException e) {
                problem = "'" + KEY_DELETION_DELAY + "' is not a number: '" + delayText + "'";
            }
        }
        if (problem != null) {
            stage = null;
        }
        String wmStage = data.get(KEY_WATERMARK_STAGE);
        if (wmStage != null && wmStage.trim().isEmpty()) {
            wmStage = null;
        }
        return new GateState(mapTransition, role, stage, toggle, wmStage, delay, problem);
    }

    private static boolean same(String colour, String value) {
        return value != null && colour.equalsIgnoreCase(value.trim());
    }

    @Override
    public String toString() {
        if (problem != null) {
            return "unusable (" + problem + ")";
        }
        return role + " in " + stage + (toggle == null ? ", no toggle" : ", toggle " + toggle);
    }
}
