import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.SerializableTimestampAssigner;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkGeneratorSupplier;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.state.KeyedStateStore;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.tuple.Tuple5;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.AllWindowedStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.datastream.WindowedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.windowing.AllWindowFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessAllWindowFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.functions.windowing.WindowFunction;
import org.apache.flink.streaming.api.functions.windowing.delta.DeltaFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.DynamicEventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.GlobalWindows;
import org.apache.flink.streaming.api.windowing.assigners.SessionWindowTimeGapExtractor;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.evictors.CountEvictor;
import org.apache.flink.streaming.api.windowing.evictors.DeltaEvictor;
import org.apache.flink.streaming.api.windowing.evictors.Evictor;
import org.apache.flink.streaming.api.windowing.evictors.TimeEvictor;
import org.apache.flink.streaming.api.windowing.triggers.ContinuousEventTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.CountTrigger;
import org.apache.flink.streaming.api.windowing.triggers.DeltaTrigger;
import org.apache.flink.streaming.api.windowing.triggers.EventTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.PurgingTrigger;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.api.windowing.windows.Window;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Runs conformance scenarios through Flink's WindowOperator / EvictingWindowOperator.
 *
 * <p>Usage: {@code java FlinkDriver <scenario-file> <batch-size> [<job-timeout-seconds>]}. The
 * scenario file holds blocks of one {@code S <id> key=value ...} line followed by {@code R key
 * num tag ts wm} lines ({@code wm} is {@code -} for "no watermark after this record"). Each
 * batch of scenarios runs as one streaming job with one independent, fully chained pipeline per
 * scenario.
 *
 * <p>Output, one line per record, tab separated: {@code <id> R <key> <start> <end> <value>
 * <timestamp>} for a window result, {@code <id> L <element> <timestamp>} for a late element,
 * {@code <id> S <key> <start> <end> <value> <timestamp>} for a side output of a context function
 * ({@code fn=*_ctx}, see {@link CtxEmit}),
 * {@code <id> E <message>} when the scenario's pipeline could not be built or failed, and
 * {@code # done <ids>} after the outputs of a finished job. What a window operator throws is
 * caught by the {@link Guard} in front of it and reported for its scenario alone; should a job
 * fail all the same, it is split in halves and run again until the failing scenarios are
 * isolated. A job that does not finish within the timeout has endless loops: their scenarios
 * get an {@code E} line, then {@code # halt} is printed and the JVM exits with status 3.
 */
public final class FlinkDriver {

    private FlinkDriver() {}

    /** Outputs of the running job, from every pipeline (the MiniCluster runs in this JVM). */
    static final ConcurrentLinkedQueue<String> OUT = new ConcurrentLinkedQueue<>();

    /** Outputs per scenario: a pipeline that fires endlessly fails once it passes the limit. */
    static final ConcurrentHashMap<String, AtomicInteger> COUNTS = new ConcurrentHashMap<>();

    static final int OUTPUT_LIMIT = 10_000;

    static long jobTimeoutSeconds = 300;

    /** Seconds the same few pipelines may run alone before they count as endless loops. */
    static final long STALL_SECONDS = 10;

    static final TypeInformation<Tuple5<String, Long, String, Long, Long>> INPUT_TYPE =
            Types.TUPLE(Types.STRING, Types.LONG, Types.STRING, Types.LONG, Types.LONG);
    static final TypeInformation<Tuple3<String, Long, String>> ELEMENT_TYPE =
            Types.TUPLE(Types.STRING, Types.LONG, Types.STRING);
    static final TypeInformation<Tuple2<Long, String>> ACC_TYPE =
            Types.TUPLE(Types.LONG, Types.STRING);

    /** One scenario: its settings and its input records. */
    static final class Scenario {
        final String id;
        final Map<String, String> conf = new HashMap<>();
        final List<Tuple5<String, Long, String, Long, Long>> records = new ArrayList<>();

        Scenario(String id) {
            this.id = id;
        }

        String get(String name) {
            String v = conf.get(name);
            if (v == null) {
                throw new IllegalArgumentException("scenario " + id + ": missing " + name);
            }
            return v;
        }
    }

    // ---------------------------------------------------------------- input

    static List<Scenario> parse(List<String> lines) {
        List<Scenario> out = new ArrayList<>();
        Scenario cur = null;
        for (String line : lines) {
            if (line.isBlank()) {
                continue;
            }
            String[] p = line.trim().split("\\s+");
            if (p[0].equals("S")) {
                cur = new Scenario(p[1]);
                out.add(cur);
                for (int i = 2; i < p.length; i++) {
                    int eq = p[i].indexOf('=');
                    cur.conf.put(p[i].substring(0, eq), p[i].substring(eq + 1));
                }
            } else if (p[0].equals("R")) {
                long wm = p[5].equals("-") ? Long.MIN_VALUE : Long.parseLong(p[5]);
                cur.records.add(
                        Tuple5.of(p[1], Long.parseLong(p[2]), p[3], Long.parseLong(p[4]), wm));
            } else {
                throw new IllegalArgumentException("bad line: " + line);
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- user functions

    static String fmt(Object o) {
        if (o == null) {
            return "null";
        }
        if (o instanceof Tuple3) {
            Tuple3<?, ?, ?> t = (Tuple3<?, ?, ?>) o;
            return t.f0 + "|" + t.f1 + "|" + t.f2;
        }
        return o.toString();
    }

    static String join(Iterable<?> elements) {
        StringBuilder sb = new StringBuilder();
        for (Object e : elements) {
            if (sb.length() > 0) {
                sb.append(';');
            }
            sb.append(fmt(e));
        }
        return sb.toString();
    }

    static String windowBounds(Window w) {
        if (w instanceof TimeWindow) {
            TimeWindow tw = (TimeWindow) w;
            return tw.getStart() + "\t" + tw.getEnd();
        }
        return "G\tG";
    }

    /** Sums nums and concatenates tags in combination order. */
    static final class ConcatReduce implements ReduceFunction<Tuple3<String, Long, String>> {
        @Override
        public Tuple3<String, Long, String> reduce(
                Tuple3<String, Long, String> a, Tuple3<String, Long, String> b) {
            return Tuple3.of(a.f0, a.f1 + b.f1, a.f2 + "." + b.f2);
        }
    }

    /** Accumulates (sum, tags in add order); merge shows its operands' order: "(a+b)". */
    static final class ConcatAggregate
            implements AggregateFunction<Tuple3<String, Long, String>, Tuple2<Long, String>, String> {
        @Override
        public Tuple2<Long, String> createAccumulator() {
            return Tuple2.of(0L, "");
        }

        @Override
        public Tuple2<Long, String> add(Tuple3<String, Long, String> v, Tuple2<Long, String> acc) {
            return Tuple2.of(acc.f0 + v.f1, acc.f1.isEmpty() ? v.f2 : acc.f1 + "." + v.f2);
        }

        @Override
        public String getResult(Tuple2<Long, String> acc) {
            return acc.f0 + "|" + acc.f1;
        }

        @Override
        public Tuple2<Long, String> merge(Tuple2<Long, String> a, Tuple2<Long, String> b) {
            return Tuple2.of(a.f0 + b.f0, "(" + a.f1 + "+" + b.f1 + ")");
        }
    }

    /** Keyed window function: "key, bounds, value" where value is "prefix[e1;e2]" or "e1". */
    static final class Emit<I, W extends Window> extends ProcessWindowFunction<I, String, String, W> {
        private final String prefix;

        Emit(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public void process(String key, Context ctx, Iterable<I> elements, Collector<String> out) {
            String body = join(elements);
            String value = prefix.isEmpty() ? body : prefix + "[" + body + "]";
            out.collect(key + "\t" + windowBounds(ctx.window()) + "\t" + value);
        }
    }

    static final class EmitAll<I, W extends Window> extends ProcessAllWindowFunction<I, String, W> {
        private final String prefix;

        EmitAll(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public void process(Context ctx, Iterable<I> elements, Collector<String> out) {
            String body = join(elements);
            String value = prefix.isEmpty() ? body : prefix + "[" + body + "]";
            out.collect("*\t" + windowBounds(ctx.window()) + "\t" + value);
        }
    }

    static final ValueStateDescriptor<Long> WINDOW_FIRINGS =
            new ValueStateDescriptor<>("w", Types.LONG);
    static final ValueStateDescriptor<Long> KEY_FIRINGS =
            new ValueStateDescriptor<>("g", Types.LONG);
    static final ValueStateDescriptor<Long> KEY_CLEARS =
            new ValueStateDescriptor<>("cl", Types.LONG);

    static long increment(KeyedStateStore store, ValueStateDescriptor<Long> descriptor)
            throws Exception {
        ValueState<Long> state = store.getState(descriptor);
        long count = (state.value() == null ? 0 : state.value()) + 1;
        state.update(count);
        return count;
    }

    static long valueOr0(KeyedStateStore store, ValueStateDescriptor<Long> descriptor)
            throws Exception {
        Long v = store.getState(descriptor).value();
        return v == null ? 0 : v;
    }

    /**
     * What the context functions ({@code fn=*_ctx}) do, for keyed and non-keyed windows alike
     * (tests/conformance/ours.py ContextEmit): each firing counts itself in window state ("w",
     * "-" for merging windows, where Flink forbids it) and in the key's global state ("g"),
     * and returns {@code C[e1;e2]#w=..#g=..#wm=..#cl=..} with the watermark ("-" when not
     * keyed: ProcessAllWindowFunction's context has none) and the key's clear calls so far,
     * after emitting {@code O[n]#g=..} to the side output. {@code clear} counts itself in
     * global state, emits {@code X#w=..#cl=..#wm=..} (the window count it clears; key "-":
     * its context has no key) to the side output, and clears the window state.
     */
    static final class CtxLogic implements java.io.Serializable {
        final boolean merging;
        final OutputTag<String> side;

        CtxLogic(boolean merging, OutputTag<String> side) {
            this.merging = merging;
            this.side = side;
        }

        String process(
                String key,
                Window window,
                KeyedStateStore windowState,
                KeyedStateStore globalState,
                String watermark,
                Iterable<?> elements,
                java.util.function.BiConsumer<OutputTag<String>, String> output)
                throws Exception {
            int n = 0;
            for (Object e : elements) {
                n++;
            }
            String w = merging ? "-" : String.valueOf(increment(windowState, WINDOW_FIRINGS));
            long g = increment(globalState, KEY_FIRINGS);
            long cl = valueOr0(globalState, KEY_CLEARS);
            String bounds = key + "\t" + windowBounds(window) + "\t";
            output.accept(side, bounds + "O[" + n + "]#g=" + g);
            return bounds + "C[" + join(elements) + "]#w=" + w + "#g=" + g + "#wm=" + watermark
                    + "#cl=" + cl;
        }

        void clear(
                Window window,
                KeyedStateStore windowState,
                KeyedStateStore globalState,
                String watermark,
                java.util.function.BiConsumer<OutputTag<String>, String> output)
                throws Exception {
            String w = "-";
            if (!merging) {
                ValueState<Long> state = windowState.getState(WINDOW_FIRINGS);
                w = fmt(state.value());
                state.clear();
            }
            long cl = increment(globalState, KEY_CLEARS);
            output.accept(side, "-\t" + windowBounds(window) + "\tX#w=" + w + "#cl=" + cl
                    + "#wm=" + watermark);
        }
    }

    /** Keyed context function (see {@link CtxLogic}). */
    static final class CtxEmit<I, W extends Window>
            extends ProcessWindowFunction<I, String, String, W> {
        private final CtxLogic logic;

        CtxEmit(CtxLogic logic) {
            this.logic = logic;
        }

        @Override
        public void process(String key, Context ctx, Iterable<I> elements, Collector<String> out)
                throws Exception {
            out.collect(logic.process(key, ctx.window(), ctx.windowState(), ctx.globalState(),
                    String.valueOf(ctx.currentWatermark()), elements, ctx::output));
        }

        @Override
        public void clear(Context ctx) throws Exception {
            logic.clear(ctx.window(), ctx.windowState(), ctx.globalState(),
                    String.valueOf(ctx.currentWatermark()), ctx::output);
        }
    }

    /** Non-keyed context function (see {@link CtxLogic}). */
    static final class CtxEmitAll<I, W extends Window>
            extends ProcessAllWindowFunction<I, String, W> {
        private final CtxLogic logic;

        CtxEmitAll(CtxLogic logic) {
            this.logic = logic;
        }

        @Override
        public void process(Context ctx, Iterable<I> elements, Collector<String> out)
                throws Exception {
            out.collect(logic.process(
                    "*", ctx.window(), ctx.windowState(), ctx.globalState(), "-", elements,
                    ctx::output));
        }

        @Override
        public void clear(Context ctx) throws Exception {
            logic.clear(ctx.window(), ctx.windowState(), ctx.globalState(), "-", ctx::output);
        }
    }

    static final class Apply<W extends Window>
            implements WindowFunction<Tuple3<String, Long, String>, String, String, W> {
        @Override
        public void apply(
                String key,
                W window,
                Iterable<Tuple3<String, Long, String>> elements,
                Collector<String> out) {
            out.collect(key + "\t" + windowBounds(window) + "\tA[" + join(elements) + "]");
        }
    }

    static final class ApplyAll<W extends Window>
            implements AllWindowFunction<Tuple3<String, Long, String>, String, W> {
        @Override
        public void apply(
                W window, Iterable<Tuple3<String, Long, String>> elements, Collector<String> out) {
            out.collect("*\t" + windowBounds(window) + "\tA[" + join(elements) + "]");
        }
    }

    /** new.num - old.num, for DeltaTrigger and DeltaEvictor. */
    static final class NumDelta implements DeltaFunction<Tuple3<String, Long, String>> {
        @Override
        public double getDelta(Tuple3<String, Long, String> old, Tuple3<String, Long, String> now) {
            return (double) (now.f1 - old.f1);
        }
    }

    /** Dynamic session gap: floorMod(num, 5) + 1. */
    static final class NumGap implements SessionWindowTimeGapExtractor<Tuple3<String, Long, String>> {
        @Override
        public long extract(Tuple3<String, Long, String> e) {
            return Math.floorMod(e.f1, 5L) + 1;
        }
    }

    static final class KeyOf implements KeySelector<Tuple3<String, Long, String>, String> {
        @Override
        public String getKey(Tuple3<String, Long, String> e) {
            return e.f0;
        }
    }

    static final class ToElement
            implements MapFunction<Tuple5<String, Long, String, Long, Long>, Tuple3<String, Long, String>> {
        @Override
        public Tuple3<String, Long, String> map(Tuple5<String, Long, String, Long, Long> r) {
            return Tuple3.of(r.f0, r.f1, r.f2);
        }
    }

    static final class RecordTime
            implements SerializableTimestampAssigner<Tuple5<String, Long, String, Long, Long>> {
        @Override
        public long extractTimestamp(Tuple5<String, Long, String, Long, Long> r, long previous) {
            return r.f3;
        }
    }

    /** Emits the watermark carried by a record right after the record. */
    static final class Punctuated implements WatermarkGenerator<Tuple5<String, Long, String, Long, Long>> {
        @Override
        public void onEvent(
                Tuple5<String, Long, String, Long, Long> r, long ts, WatermarkOutput output) {
            if (r.f4 != Long.MIN_VALUE) {
                output.emitWatermark(new org.apache.flink.api.common.eventtime.Watermark(r.f4));
            }
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput output) {}
    }

    static final class PunctuatedSupplier
            implements WatermarkGeneratorSupplier<Tuple5<String, Long, String, Long, Long>> {
        @Override
        public WatermarkGenerator<Tuple5<String, Long, String, Long, Long>> createWatermarkGenerator(
                Context ctx) {
            return new Punctuated();
        }
    }

    /** Tags an output line with its scenario and kind, and appends the record timestamp. */
    static final class Record<T> extends ProcessFunction<T, String> {
        private final String prefix;

        Record(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public void processElement(T value, Context ctx, Collector<String> out) {
            int n = COUNTS.computeIfAbsent(prefix, k -> new AtomicInteger()).incrementAndGet();
            if (n > OUTPUT_LIMIT) {
                throw new IllegalStateException(
                        "more than " + OUTPUT_LIMIT + " outputs (endless firing?)");
            }
            OUT.add(prefix + "\t" + fmt(value) + "\t" + ctx.timestamp());
        }
    }

    /** Failures of pipelines, by scenario id (see {@link Guard}). */
    static final ConcurrentHashMap<String, String> ERRORS = new ConcurrentHashMap<>();

    /**
     * Forwards records and watermarks to the chained window operator, and catches what it
     * throws: the scenario is then recorded as failed and its further input dropped, so one
     * failing pipeline does not fail the job (the chained operators run inside these calls).
     */
    static final class Guard<T> extends AbstractStreamOperator<T>
            implements OneInputStreamOperator<T, T> {
        private final String id;
        private boolean failed;

        Guard(String id) {
            this.id = id;
        }

        private void fail(Throwable t) {
            failed = true;
            ERRORS.putIfAbsent(id, rootMessage(t));
        }

        @Override
        public void processElement(StreamRecord<T> element) {
            if (failed) {
                return;
            }
            try {
                output.collect(element);
            } catch (Throwable t) {
                fail(t);
            }
        }

        @Override
        public void processWatermark(Watermark mark) {
            if (failed) {
                return;
            }
            try {
                super.processWatermark(mark);
            } catch (Throwable t) {
                fail(t);
            }
        }
    }

    // ---------------------------------------------------------------- pipelines

    @SuppressWarnings({"rawtypes", "unchecked"})
    static WindowAssigner assigner(String spec) {
        String[] p = spec.split(":");
        switch (p[0]) {
            case "tumble":
                return TumblingEventTimeWindows.of(
                        Duration.ofMillis(Long.parseLong(p[1])),
                        Duration.ofMillis(Long.parseLong(p[2])));
            case "slide":
                return SlidingEventTimeWindows.of(
                        Duration.ofMillis(Long.parseLong(p[1])),
                        Duration.ofMillis(Long.parseLong(p[2])),
                        Duration.ofMillis(Long.parseLong(p[3])));
            case "session":
                return EventTimeSessionWindows.withGap(Duration.ofMillis(Long.parseLong(p[1])));
            case "dynsession":
                return DynamicEventTimeSessionWindows.withDynamicGap(new NumGap());
            case "global":
                return GlobalWindows.create();
            default:
                throw new IllegalArgumentException("assigner " + spec);
        }
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    static Trigger trigger(String spec) {
        String[] p = spec.split(":");
        switch (p[0]) {
            case "event":
                return EventTimeTrigger.create();
            case "count":
                return CountTrigger.of(Long.parseLong(p[1]));
            case "cont":
                return ContinuousEventTimeTrigger.of(Duration.ofMillis(Long.parseLong(p[1])));
            case "delta":
                return DeltaTrigger.of(
                        Double.parseDouble(p[1]),
                        new NumDelta(),
                        ELEMENT_TYPE.createSerializer(new SerializerConfigImpl()));
            default:
                throw new IllegalArgumentException("trigger " + spec);
        }
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    static Evictor evictor(String spec) {
        String[] p = spec.split(":");
        boolean after = p[p.length - 1].equals("after");
        switch (p[0]) {
            case "count":
                return CountEvictor.of(Long.parseLong(p[1]), after);
            case "time":
                return TimeEvictor.of(Duration.ofMillis(Long.parseLong(p[1])), after);
            case "delta":
                return DeltaEvictor.of(Double.parseDouble(p[1]), new NumDelta(), after);
            default:
                throw new IllegalArgumentException("evictor " + spec);
        }
    }

    /** Adds the scenario's pipeline to the environment. */
    @SuppressWarnings({"rawtypes", "unchecked"})
    static void build(StreamExecutionEnvironment env, Scenario s) {
        WatermarkStrategy<Tuple5<String, Long, String, Long, Long>> strategy =
                WatermarkStrategy.forGenerator(new PunctuatedSupplier())
                        .withTimestampAssigner(new RecordTime());
        DataStream<Tuple3<String, Long, String>> elements =
                env.fromData(s.records, INPUT_TYPE)
                        .name("source-" + s.id)
                        .assignTimestampsAndWatermarks(strategy)
                        .map(new ToElement())
                        .returns(ELEMENT_TYPE)
                        .transform("guard-" + s.id, ELEMENT_TYPE, new Guard<>(s.id));

        boolean keyed = s.get("keyed").equals("1");
        String assignerSpec = s.get("assigner");
        String triggerSpec = s.get("trigger");
        String evictorSpec = s.get("evictor");
        boolean purge = s.get("purge").equals("1");
        long lateness = Long.parseLong(s.get("lateness"));
        boolean lateTag = s.get("late").equals("1");
        String fn = s.get("fn");
        OutputTag<Tuple3<String, Long, String>> late =
                new OutputTag<>("late-" + s.id, ELEMENT_TYPE);
        OutputTag<String> side = new OutputTag<>("ctx-" + s.id, Types.STRING);
        CtxLogic ctxLogic = new CtxLogic(
                assignerSpec.startsWith("session") || assignerSpec.equals("dynsession"), side);

        SingleOutputStreamOperator<String> results;
        if (keyed) {
            KeyedStream<Tuple3<String, Long, String>, String> ks =
                    DataStreamUtils.reinterpretAsKeyedStream(elements, new KeyOf(), Types.STRING);
            WindowedStream ws;
            if (assignerSpec.startsWith("countwin:")) {
                String[] p = assignerSpec.split(":");
                ws = p.length == 2
                        ? ks.countWindow(Long.parseLong(p[1]))
                        : ks.countWindow(Long.parseLong(p[1]), Long.parseLong(p[2]));
            } else {
                ws = ks.window(assigner(assignerSpec));
            }
            if (!triggerSpec.equals("default")) {
                Trigger t = trigger(triggerSpec);
                ws = ws.trigger(purge ? PurgingTrigger.of(t) : t);
            }
            if (!evictorSpec.equals("none")) {
                ws = ws.evictor(evictor(evictorSpec));
            }
            ws = ws.allowedLateness(Duration.ofMillis(lateness));
            if (lateTag) {
                ws = ws.sideOutputLateData(late);
            }
            switch (fn) {
                case "reduce":
                    results = ws.reduce(new ConcatReduce(), new Emit(""), Types.STRING);
                    break;
                case "reduce_pwf":
                    results = ws.reduce(new ConcatReduce(), new Emit("P"), Types.STRING);
                    break;
                case "agg":
                    results = ws.aggregate(
                            new ConcatAggregate(), new Emit(""), ACC_TYPE, Types.STRING, Types.STRING);
                    break;
                case "agg_pwf":
                    results = ws.aggregate(
                            new ConcatAggregate(), new Emit("P"), ACC_TYPE, Types.STRING, Types.STRING);
                    break;
                case "process":
                    results = ws.process(new Emit("P"), Types.STRING);
                    break;
                case "apply":
                    results = ws.apply(new Apply(), Types.STRING);
                    break;
                case "process_ctx":
                    results = ws.process(new CtxEmit(ctxLogic), Types.STRING);
                    break;
                case "reduce_ctx":
                    results = ws.reduce(new ConcatReduce(), new CtxEmit(ctxLogic), Types.STRING);
                    break;
                case "agg_ctx":
                    results = ws.aggregate(new ConcatAggregate(), new CtxEmit(ctxLogic),
                            ACC_TYPE, Types.STRING, Types.STRING);
                    break;
                default:
                    throw new IllegalArgumentException("fn " + fn);
            }
        } else {
            AllWindowedStream ws;
            if (assignerSpec.startsWith("countwin:")) {
                String[] p = assignerSpec.split(":");
                ws = p.length == 2
                        ? elements.countWindowAll(Long.parseLong(p[1]))
                        : elements.countWindowAll(Long.parseLong(p[1]), Long.parseLong(p[2]));
            } else {
                ws = elements.windowAll(assigner(assignerSpec));
            }
            if (!triggerSpec.equals("default")) {
                Trigger t = trigger(triggerSpec);
                ws = ws.trigger(purge ? PurgingTrigger.of(t) : t);
            }
            if (!evictorSpec.equals("none")) {
                ws = ws.evictor(evictor(evictorSpec));
            }
            ws = ws.allowedLateness(Duration.ofMillis(lateness));
            if (lateTag) {
                ws = ws.sideOutputLateData(late);
            }
            switch (fn) {
                case "reduce":
                    results = ws.reduce(new ConcatReduce(), new EmitAll(""), Types.STRING);
                    break;
                case "reduce_pwf":
                    results = ws.reduce(new ConcatReduce(), new EmitAll("P"), Types.STRING);
                    break;
                case "agg":
                    results = ws.aggregate(
                            new ConcatAggregate(), new EmitAll(""), ACC_TYPE, Types.STRING, Types.STRING);
                    break;
                case "agg_pwf":
                    results = ws.aggregate(
                            new ConcatAggregate(), new EmitAll("P"), ACC_TYPE, Types.STRING, Types.STRING);
                    break;
                case "process":
                    results = ws.process(new EmitAll("P"), Types.STRING);
                    break;
                case "apply":
                    results = ws.apply(new ApplyAll(), Types.STRING);
                    break;
                case "process_ctx":
                    results = ws.process(new CtxEmitAll(ctxLogic), Types.STRING);
                    break;
                case "reduce_ctx":
                    results = ws.reduce(new ConcatReduce(), new CtxEmitAll(ctxLogic), Types.STRING);
                    break;
                case "agg_ctx":
                    results = ws.aggregate(new ConcatAggregate(), new CtxEmitAll(ctxLogic),
                            ACC_TYPE, Types.STRING, Types.STRING);
                    break;
                default:
                    throw new IllegalArgumentException("fn " + fn);
            }
        }
        results.process(new Record<String>(s.id + "\tR"))
                .returns(Types.STRING)
                .sinkTo(new DiscardingSink<>());
        if (lateTag) {
            results.getSideOutput(late)
                    .process(new Record<Tuple3<String, Long, String>>(s.id + "\tL"))
                    .returns(Types.STRING)
                    .sinkTo(new DiscardingSink<>());
        }
        if (fn.endsWith("_ctx")) {
            results.getSideOutput(side)
                    .process(new Record<String>(s.id + "\tS"))
                    .returns(Types.STRING)
                    .sinkTo(new DiscardingSink<>());
        }
    }

    // ---------------------------------------------------------------- jobs

    static StreamExecutionEnvironment environment() {
        Configuration conf = new Configuration();
        conf.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.STREAMING);
        conf.set(PipelineOptions.AUTO_WATERMARK_INTERVAL, Duration.ZERO);
        conf.setString("restart-strategy.type", "none");
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        env.getConfig().setAutoWatermarkInterval(0);
        env.setParallelism(1);
        return env;
    }

    static String rootMessage(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String msg = root.getClass().getName() + ": " + root.getMessage();
        return msg.replaceAll("\\s+", " ");
    }

    /** Runs the scenarios as one job; on failure splits them and tries again. */
    static void run(List<Scenario> batch, PrintStream out) throws Exception {
        StreamExecutionEnvironment env = environment();
        List<Scenario> built = new ArrayList<>();
        for (Scenario s : batch) {
            try {
                build(env, s);
                built.add(s);
            } catch (RuntimeException e) {
                out.println(s.id + "\tE\tbuild: " + rootMessage(e));
            }
        }
        if (built.isEmpty()) {
            return;
        }
        if (built.size() < batch.size()) {
            // A scenario that failed half-way may have left operators behind: start over.
            run(built, out);
            return;
        }
        OUT.clear();
        COUNTS.clear();
        ERRORS.clear();
        JobClient client = env.executeAsync("conformance");
        try {
            awaitOrHalt(client, built, out);
        } catch (ExecutionException e) {
            OUT.clear();
            if (built.size() == 1) {
                out.println(built.get(0).id + "\tE\trun: " + rootMessage(e));
                return;
            }
            int half = built.size() / 2;
            run(new ArrayList<>(built.subList(0, half)), out);
            run(new ArrayList<>(built.subList(half, built.size())), out);
            return;
        }
        printFinished(built, Map.of(), out);
    }

    /** Prints the outputs and failures of the finished scenarios, then their ids. */
    static void printFinished(List<Scenario> scenarios, Map<String, String> stuck, PrintStream out) {
        for (String line : OUT) {
            String id = line.substring(0, line.indexOf('\t'));
            if (!ERRORS.containsKey(id) && !stuck.containsKey(id)) {
                out.println(line);
            }
        }
        OUT.clear();
        for (Map.Entry<String, String> e : ERRORS.entrySet()) {
            out.println(e.getKey() + "\tE\trun: " + e.getValue());
        }
        StringBuilder done = new StringBuilder("#\tdone\t");
        for (Scenario s : scenarios) {
            if (!stuck.containsKey(s.id)) {
                done.append(s.id).append(' ');
            }
        }
        out.println(done.toString().trim());
    }

    static final Pattern TASK_NAME = Pattern.compile("^Source: source-(\\S+) ->");

    /**
     * Scenarios whose task thread is still alive, with where it is in the window code. Every
     * pipeline is one chained task, whose thread is named after its source.
     */
    static Map<String, String> liveScenarios() {
        Map<String, String> live = new HashMap<>();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            Matcher m = TASK_NAME.matcher(e.getKey().getName());
            if (!m.find()) {
                continue;
            }
            StringBuilder where = new StringBuilder();
            int shown = 0;
            for (StackTraceElement frame : e.getValue()) {
                String cls = frame.getClassName();
                if ((cls.startsWith("org.apache.flink.streaming.api.windowing")
                                || cls.contains("operators.windowing"))
                        && shown++ < 3) {
                    where.append(' ').append(cls.replaceAll(".*\\.", ""))
                            .append('.').append(frame.getMethodName());
                }
            }
            live.merge(m.group(1), where.toString(), (a, b) -> a.length() >= b.length() ? a : b);
        }
        return live;
    }

    /**
     * Waits for the job. A task thread stuck in an endless loop cannot be stopped, so when the
     * same few pipelines have been running, alone, for {@code STALL_SECONDS} (or the job passes
     * the timeout), they are reported as failed by the scenario id in their task name, the
     * outputs of all others (finished by then) are printed, and this JVM stops with status 3.
     * The caller runs the scenarios of later batches again.
     */
    static void awaitOrHalt(JobClient client, List<Scenario> scenarios, PrintStream out)
            throws Exception {
        long start = System.nanoTime();
        Set<String> previous = Set.of();
        long unchangedSince = start;
        while (true) {
            try {
                client.getJobExecutionResult().get(1, TimeUnit.SECONDS);
                return;
            } catch (TimeoutException e) {
                // still running
            }
            long now = System.nanoTime();
            Map<String, String> live = liveScenarios();
            if (!live.keySet().equals(previous)) {
                previous = Set.copyOf(live.keySet());
                unchangedSince = now;
            }
            boolean stalled = !live.isEmpty()
                    && live.size() <= Math.max(1, scenarios.size() / 10)
                    && now - unchangedSince > STALL_SECONDS * 1_000_000_000L;
            if (stalled || now - start > jobTimeoutSeconds * 1_000_000_000L) {
                if (!stalled) {
                    // Timed out without a few stuck pipelines (a slow machine?): report
                    // nothing as finished, the caller gives up.
                    out.println("#\thalt");
                    out.flush();
                    Runtime.getRuntime().halt(3);
                }
                Map<String, String> stuck = new HashMap<>();
                long seconds = (now - start) / 1_000_000_000L;
                for (Map.Entry<String, String> e : live.entrySet()) {
                    stuck.put(e.getKey(), "run: no end after " + seconds
                            + " s (endless loop in" + e.getValue() + ")");
                }
                printFinished(scenarios, stuck, out);
                for (Map.Entry<String, String> e : stuck.entrySet()) {
                    out.println(e.getKey() + "\tE\t" + e.getValue());
                }
                out.println("#\thalt");
                out.flush();
                Runtime.getRuntime().halt(3);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> lines;
        if (args.length == 0 || args[0].equals("-")) {
            lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
                    .lines()
                    .toList();
        } else {
            lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        }
        int batchSize = args.length > 1 ? Integer.parseInt(args[1]) : 200;
        if (args.length > 2) {
            jobTimeoutSeconds = Long.parseLong(args[2]);
        }
        List<Scenario> scenarios = parse(lines);
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (int i = 0; i < scenarios.size(); i += batchSize) {
            List<Scenario> batch =
                    new ArrayList<>(scenarios.subList(i, Math.min(i + batchSize, scenarios.size())));
            long t0 = System.nanoTime();
            run(batch, out);
            out.println("#\tbatch\t" + (i + batch.size()) + "\t" + scenarios.size() + "\t"
                    + (System.nanoTime() - t0) / 1_000_000);
            out.flush();
        }
        out.flush();
        System.exit(0);
    }
}
