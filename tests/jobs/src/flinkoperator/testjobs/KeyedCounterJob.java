package flinkoperator.testjobs;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimitedSourceReader;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.PrintSink;
import org.apache.flink.util.Collector;

/**
 * A small stateful streaming job for the operator's tests against a real Flink cluster.
 *
 * <p>An unbounded, rate-limited sequence of numbers (operator uid {@code sequence-source}) is keyed
 * by {@code n % keys}; a keyed function (uid {@code keyed-counter}) counts the elements of each key
 * in a {@code ValueState<Long>}, which lives in checkpoints and savepoints. Each new count is made
 * visible outside the JVM twice: written to {@code <out>/key-K} (the latest count as decimal text,
 * replaced atomically; uid {@code count-files}) when {@code --out} is given, and printed as
 * {@code key=K count=N} to the TaskManager's stdout (uid {@code print-sink}). After a restore the
 * counts carry on from the restored state instead of starting at 1 again.
 *
 * <p>Arguments (all optional): {@code --rate R} elements per second over all keys (default 20),
 * {@code --keys K} (default 4), {@code --out DIR}, {@code --fail-at N} (throw when a key's count
 * reaches N, a deterministic crash loop; default never), {@code --name NAME} (the job name,
 * default {@code keyed-counter}), {@code --work-ms M} (each element costs the counter M ms, so
 * that its busy time follows the rate, as a real job's does; default 0), {@code --rate-file FILE}
 * (the rate is read from FILE, a decimal number, at most once a second, so that the load on a
 * running job can step up and down as a real source's does; {@code --rate} while FILE is missing
 * or does not read). Checkpointing and parallelism come from the cluster config or the
 * submission.
 *
 * <p>The source compiles unchanged against every Flink version from 1.18 to 2.x. So it overrides no
 * {@code open} (1.18 has only {@code open(Configuration)}, 2.x only {@code open(OpenContext)}; state
 * and files are set up on first use instead), and its source is Flink's own rate-limited number
 * sequence built from classes of flink-core (the datagen connector's {@code DataGeneratorSource} is
 * the same thing, but is not in the 1.18 distribution). Its sink is Flink's unified-API
 * {@code PrintSink}.
 */
public final class KeyedCounterJob {

    private KeyedCounterJob() {}

    public static void main(String[] args) throws Exception {
        double rate = 20;
        int keys = 4;
        String out = null;
        long failAt = -1;
        String name = "keyed-counter";
        long workMs = 0;
        String rateFile = null;
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + flag);
            }
            String value = args[++i];
            switch (flag) {
                case "--rate":
                    rate = Double.parseDouble(value);
                    break;
                case "--keys":
                    keys = Integer.parseInt(value);
                    break;
                case "--out":
                    out = value;
                    break;
                case "--fail-at":
                    failAt = Long.parseLong(value);
                    break;
                case "--name":
                    name = value;
                    break;
                case "--work-ms":
                    workMs = Long.parseLong(value);
                    break;
                case "--rate-file":
                    rateFile = value;
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument " + flag);
            }
        }
        if (rate <= 0 || keys <= 0) {
            throw new IllegalArgumentException("--rate and --keys must be positive");
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();

        RateLimitedSequence source = new RateLimitedSequence(rate, rateFile);

        env.fromSource(source, WatermarkStrategy.noWatermarks(), "sequence-source")
                .uid("sequence-source")
                .keyBy(new ModKey(keys), Types.INT)
                .process(new Counter(failAt, workMs), Types.TUPLE(Types.INT, Types.LONG))
                .name("keyed-counter")
                .uid("keyed-counter")
                .map(new CountFiles(out), Types.STRING)
                .name("count-files")
                .uid("count-files")
                .sinkTo(new PrintSink<>())
                .name("print-sink")
                .uid("print-sink");

        env.execute(name);
    }

    /**
     * 0, 1, 2, ... at {@code rate} elements per second over all subtasks: the splits, enumerator
     * and checkpointed positions of {@link NumberSequenceSource}, each reader behind a {@link
     * RateLimitedSourceReader}, as the datagen connector's {@code DataGeneratorSource} does. Raw
     * types: the rate limiter's interfaces gained a type parameter in 2.x.
     */
    static final class RateLimitedSequence extends NumberSequenceSource {
        private static final long serialVersionUID = 1L;
        private final double rate;
        private final String rateFile;

        RateLimitedSequence(double rate) {
            this(rate, null);
        }

        RateLimitedSequence(double rate, String rateFile) {
            super(0, Long.MAX_VALUE - 1);
            this.rate = rate;
            this.rateFile = rateFile;
        }

        @Override
        @SuppressWarnings({"rawtypes", "unchecked"})
        public SourceReader<Long, NumberSequenceSplit> createReader(SourceReaderContext context) {
            RateLimiter limiter;
            if (rateFile == null) {
                RateLimiterStrategy strategy = RateLimiterStrategy.perSecond(rate);
                limiter = strategy.createRateLimiter(context.currentParallelism());
            } else {
                limiter = new FileRate(rate, rateFile, context.currentParallelism());
            }
            return new RateLimitedSourceReader(super.createReader(context), limiter);
        }
    }

    /**
     * Paces one reader to its share of the rate in a file, read at most once a second. Raw and
     * with both {@code acquire} methods: 1.x asks {@code acquire()}, 2.x {@code acquire(int)}.
     */
    @SuppressWarnings("rawtypes")
    static final class FileRate implements RateLimiter {
        private final double fallback;
        private final Path file;
        private final int parallelism;
        private final ExecutorService pacer =
                Executors.newSingleThreadExecutor(
                        r -> {
                            Thread t = new Thread(r, "rate-file-pacer");
                            t.setDaemon(true);
                            return t;
                        });
        private double rate;
        private long readAtNanos = Long.MIN_VALUE;
        private long nextNanos = System.nanoTime();

        FileRate(double fallback, String file, int parallelism) {
            this.fallback = fallback;
            this.file = Paths.get(file);
            this.parallelism = Math.max(1, parallelism);
            this.rate = fallback;
        }

        public CompletionStage<Void> acquire() {
            return acquire(1);
        }

        public CompletionStage<Void> acquire(int permits) {
            return CompletableFuture.runAsync(() -> pace(permits), pacer);
        }

        private void pace(int permits) {
            long now = System.nanoTime();
            if (now - readAtNanos >= 1_000_000_000L || readAtNanos == Long.MIN_VALUE) {
                readAtNanos = now;
                rate = read();
            }
            double perReader = rate / parallelism;
            long start = Math.max(now, nextNanos);
            nextNanos = start + (long) (Math.max(1, permits) * 1e9 / perReader);
            long waitNanos = start - now;
            if (waitNanos > 0) {
                try {
                    Thread.sleep(waitNanos / 1_000_000L, (int) (waitNanos % 1_000_000L));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        private double read() {
            try {
                double read = Double.parseDouble(Files.readString(file).trim());
                return read > 0 ? read : fallback;
            } catch (IOException | NumberFormatException e) {
                return fallback;
            }
        }
    }

    static final class ModKey implements KeySelector<Long, Integer> {
        private static final long serialVersionUID = 1L;
        private final int keys;

        ModKey(int keys) {
            this.keys = keys;
        }

        @Override
        public Integer getKey(Long n) {
            return (int) Math.floorMod(n, (long) keys);
        }
    }

    /** Counts the elements of each key in keyed state and emits (key, count). */
    static final class Counter extends KeyedProcessFunction<Integer, Long, Tuple2<Integer, Long>> {
        private static final long serialVersionUID = 1L;
        private final long failAt;
        private final long workMs;
        private transient ValueState<Long> count;

        Counter(long failAt, long workMs) {
            this.failAt = failAt;
            this.workMs = workMs;
        }

        @Override
        public void processElement(Long n, Context ctx, Collector<Tuple2<Integer, Long>> collector)
                throws Exception {
            if (count == null) {
                count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            }
            if (workMs > 0) {
                // Busy as a real job's work keeps a task busy, without taking a core from the
                // machine's other clusters.
                Thread.sleep(workMs);
            }
            Long previous = count.value();
            long next = previous == null ? 1 : previous + 1;
            int key = ctx.getCurrentKey();
            if (failAt > 0 && next >= failAt) {
                throw new IllegalStateException(
                        "key " + key + " reached --fail-at " + failAt + " (a deliberate failure)");
            }
            count.update(next);
            collector.collect(Tuple2.of(key, next));
        }
    }

    /** Writes each key's latest count to DIR/key-K (atomically) and formats it for printing. */
    static final class CountFiles implements MapFunction<Tuple2<Integer, Long>, String> {
        private static final long serialVersionUID = 1L;
        private final String out;
        private transient Path dir;
        private transient String tmpSuffix;

        CountFiles(String out) {
            this.out = out;
        }

        @Override
        public String map(Tuple2<Integer, Long> keyCount) throws IOException {
            if (out != null && dir == null) {
                Path created = Paths.get(out);
                Files.createDirectories(created);
                tmpSuffix = ".tmp-" + UUID.randomUUID();
                dir = created;
            }
            if (dir != null) {
                Path target = dir.resolve("key-" + keyCount.f0);
                Path tmp = dir.resolve(".key-" + keyCount.f0 + tmpSuffix);
                Files.write(tmp, (keyCount.f1 + "\n").getBytes(StandardCharsets.UTF_8));
                try {
                    Files.move(
                            tmp,
                            target,
                            StandardCopyOption.ATOMIC_MOVE,
                            StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
            return "key=" + keyCount.f0 + " count=" + keyCount.f1;
        }
    }
}
