package flinkoperator.bluegreen;

import flinkoperator.bluegreen.ConfigMapStore.CasResult;
import flinkoperator.bluegreen.GateDecision.Mode;
import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One gate subtask apart from Flink: the processing thread calls {@link #decide} for each record
 * and never does I/O; a daemon thread polls the ConfigMap, publishes each reading as an immutable
 * {@link GateState} in a volatile field, and performs the writes the processing thread asked for.
 */
final class GateRuntime implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WatermarkGate.class);
    private static final long WARN_EVERY_MS = 60_000L;

    private final GateSettings settings;
    private final ConfigMapStore store;
    private final String label;
    private final LongSupplier clock;
    private final HandOver handOver;

    private volatile GateState state;

    /** A write the processing thread wants: for the transition it saw, a toggle or WAITING. */
    private static final class Wanted {
        final String transitionId;
        final long toggle;

        Wanted(String transitionId, long toggle) {
            this.transitionId = transitionId;
            this.toggle = toggle;
        }
    }

    private volatile Wanted wantWaiting;
    private volatile Wanted wantToggle;

    private volatile boolean closed;
    private volatile Thread poller;

    // Only the processing thread touches these.
    private GateState.Role loggedRole;
    private GateState.Stage loggedStage;
    private Long loggedToggle;
    private Mode loggedMode;
    private String loggedProblem;

    // Only the poller touches this.
    private final Map<String, Long> lastWarned = new HashMap<>();

    GateRuntime(GateSettings settings, ConfigMapStore store, String label, LongSupplier clock) {
        this.settings = settings;
        this.store = store;
        this.label = label;
        this.clock = clock;
        this.handOver = new HandOver(settings.idleTimeoutMs, clock);
    }

    /**
     * Reads the map once, synchronously, so that no record is decided without a state.
     *
     * @throws IOException when the first read fails, with what to do about it
     */
    void init() throws IOException {
        publish(store.read());
    }

    /** {@link #init()}, then starts the poller thread. */
    void start(String threadName) throws IOException {
        init();
        Thread t = new Thread(this::pollLoop, threadName);
        t.setDaemon(true);
        poller = t;
        t.start();
    }

    GateState state() {
        return state;
    }

    int handOverDone() {
        return handOver.value();
    }

    /** Processing thread: whether the record passes. */
    boolean decide(Long eventTime, long watermark) {
        GateState s = state;
        handOver.onRecord(watermark);
        Mode mode = GateDecision.mode(s, watermark);
        if (mode != loggedMode
                || s.role != loggedRole
                || s.stage != loggedStage
                || !Objects.equals(s.toggle, loggedToggle)
                || !Objects.equals(s.problem, loggedProblem)) {
            logChange(s, mode);
        }
        if (s.mapTransitionId != null) {
            if (GateDecision.wantsWaiting(s)) {
                if (wantWaiting == null) {
                    wantWaiting = new Wanted(s.mapTransitionId, 0L);
                    wakePoller();
                }
            } else {
                long proposal = GateDecision.proposal(s, watermark);
                if (proposal != GateDecision.NO_PROPOSAL && wantToggle == null) {
                    wantToggle = new Wanted(s.mapTransitionId, proposal);
                    wakePoller();
                }
            }
        }
        return GateDecision.passes(mode, s, eventTime == null ? Long.MIN_VALUE : eventTime);
    }

    private void logChange(GateState s, Mode mode) {
        if (s.problem != null) {
            if (!s.problem.equals(loggedProblem)) {
                LOG.warn("{}: cannot use {}: {}; dropping every record until it is fixed",
                        label, store.describe(), s.problem);
            }
        } else {
            LOG.info("{}: {} in {}, {}, {}",
                    label, s.role, s.stage,
                    s.toggle == null ? "no toggle" : "toggle " + s.toggle,
                    mode.description);
        }
        loggedRole = s.role;
        loggedStage = s.stage;
        loggedToggle = s.toggle;
        loggedMode = mode;
        loggedProblem = s.problem;
    }

    private void wakePoller() {
        Thread t = poller;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    private void publish(Map<String, String> data) {
        GateState s = GateState.of(data, settings.colour, settings.transitionId);
        handOver.onState(s);
        state = s;
    }

    private void pollLoop() {
        long intervalNanos = TimeUnit.MILLISECONDS.toNanos(settings.pollIntervalMs);
        while (!closed) {
            LockSupport.parkNanos(this, intervalNanos);
            if (closed || Thread.currentThread().isInterrupted()) {
                break;
            }
            pollOnce();
        }
    }

    /** One round of the poller: read, then the wanted writes, then read again if it wrote. */
    void pollOnce() {
        try {
            publish(store.read());
        } catch (IOException | RuntimeException e) {
            warn("read", "cannot read " + store.describe(), e);
            return;
        }
        boolean wrote = false;
        Wanted w = wantWaiting;
        if (w != null) {
            Map<String, String> entries = new LinkedHashMap<>();
            entries.put(GateState.KEY_WATERMARK_STAGE, GateState.WAITING_FOR_WATERMARK);
            if (write(w.transitionId, GateState.KEY_WATERMARK_STAGE, entries, "waiting")) {
                wantWaiting = null;
                wrote = true;
            }
        }
        Wanted t = wantToggle;
        if (t != null) {
            Map<String, String> entries = new LinkedHashMap<>();
            entries.put(GateState.KEY_TOGGLE, Long.toString(t.toggle));
            entries.put(GateState.KEY_WATERMARK_STAGE, GateState.WATERMARK_SET);
            if (write(t.transitionId, GateState.KEY_TOGGLE, entries, "toggle")) {
                wantToggle = null;
                wrote = true;
            }
        }
        if (wrote) {
            try {
                publish(store.read());
            } catch (IOException | RuntimeException e) {
                warn("read", "cannot read " + store.describe(), e);
            }
        }
    }

    /** @return whether the write came to an end (written, adopted or refused); false on errors */
    private boolean write(
            String transitionId, String key, Map<String, String> entries, String kind) {
        CasResult r;
        try {
            r = store.cas(transitionId, key, null, entries);
        } catch (IOException | RuntimeException e) {
            warn("write-" + kind, "cannot write " + entries + " to " + store.describe(), e);
            return false;
        }
        if (r.refused) {
            LOG.info("{}: did not write {}: {} now belongs to another transition than {}",
                    label, entries, store.describe(), transitionId);
        } else if (r.written) {
            LOG.info("{}: wrote {} to {} (transition {})",
                    label, entries, store.describe(), transitionId);
        } else {
            LOG.info("{}: {} already holds {}={} (another writer was first): adopting it",
                    label, store.describe(), key, r.value);
        }
        return true;
    }

    private void warn(String kind, String what, Exception e) {
        long now = clock.getAsLong();
        Long last = lastWarned.get(kind);
        if (last != null && now - last < WARN_EVERY_MS) {
            return;
        }
        lastWarned.put(kind, now);
        LOG.warn("{}: {}: {} (tries again every {} ms; this warning at most once a minute)",
                label, what, e.getMessage() == null ? e.toString() : e.getMessage(),
                settings.pollIntervalMs);
    }

    @Override
    public void close() {
        closed = true;
        Thread t = poller;
        if (t != null) {
            t.interrupt();
            LockSupport.unpark(t);
            try {
                t.join(2_000L);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
