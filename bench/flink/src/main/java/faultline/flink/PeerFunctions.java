package faultline.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/** The peer job's records and operators: faultline's orders job, in Flink's terms. */
final class PeerFunctions {
    private PeerFunctions() {}

    /** An order, its event time the Kafka record's timestamp. */
    public static final class Order {
        public String orderId;
        public String customer;
        public long amountCents;
        public long eventTime;

        public Order() {}
    }

    /** A payment of an order. */
    public static final class Payment {
        public String orderId;
        public long amountCents;
        public long eventTime;

        public Payment() {}
    }

    /** An order joined with its payment. */
    public static final class PaidOrder {
        public String orderId;
        public String customer;
        public long amountCents;

        public PaidOrder() {}
    }

    /** The string value of field in a flat JSON object, or null. */
    static String str(String json, String field) {
        String key = "\"" + field + "\":\"";
        int i = json.indexOf(key);
        if (i < 0) {
            return null;
        }
        int start = i + key.length();
        int end = json.indexOf('"', start);
        return end < 0 ? null : json.substring(start, end);
    }

    /** The integer value of field in a flat JSON object. */
    static long num(String json, String field) {
        String key = "\"" + field + "\":";
        int i = json.indexOf(key);
        if (i < 0) {
            throw new IllegalArgumentException("no " + field + " in " + json);
        }
        int start = i + key.length(), end = start;
        while (end < json.length() && (Character.isDigit(json.charAt(end)) || json.charAt(end) == '-')) {
            end++;
        }
        return Long.parseLong(json.substring(start, end));
    }

    static String customerOf(String json) {
        String c = str(json, "customer");
        return c == null ? "" : c;
    }

    /** parse-orders: the JSON of an order. */
    static final class ParseOrder extends ProcessFunction<String, Order> {
        private transient Fault.Hook hook;

        @Override
        public void open(OpenContext ctx) {
            hook = Fault.hook(getRuntimeContext());
        }

        @Override
        public void processElement(String v, Context ctx, Collector<Order> out) {
            hook.record();
            Order o = new Order();
            o.orderId = str(v, "order_id");
            o.customer = str(v, "customer");
            o.amountCents = num(v, "amount_cents");
            o.eventTime = ctx.timestamp() == null ? 0 : ctx.timestamp();
            if (o.orderId == null || o.customer == null) {
                throw new IllegalArgumentException("not an order: " + v);
            }
            out.collect(o);
        }
    }

    /** parse-payments: the JSON of a payment. */
    static final class ParsePayment extends ProcessFunction<String, Payment> {
        private transient Fault.Hook hook;

        @Override
        public void open(OpenContext ctx) {
            hook = Fault.hook(getRuntimeContext());
        }

        @Override
        public void processElement(String v, Context ctx, Collector<Payment> out) {
            hook.record();
            Payment p = new Payment();
            p.orderId = str(v, "order_id");
            p.amountCents = num(v, "amount_cents");
            p.eventTime = ctx.timestamp() == null ? 0 : ctx.timestamp();
            if (p.orderId == null) {
                throw new IllegalArgumentException("not a payment: " + v);
            }
            out.collect(p);
        }
    }

    /**
     * join: an order and its payment, whichever comes first waiting in keyed
     * state for the other; a pair further apart in event time than the TTL
     * is not joined, and a side still waiting TTL plus max(TTL, 5 s) after
     * its time is dropped (faultline's join, and its sweep).
     */
    static final class Join extends KeyedCoProcessFunction<String, Order, Payment, PaidOrder> {
        private final long ttl;
        private transient ValueState<Order> order;
        private transient ValueState<Payment> payment;
        private transient Fault.Hook hook;

        Join(long ttl) {
            this.ttl = ttl;
        }

        @Override
        public void open(OpenContext ctx) {
            order = getRuntimeContext().getState(new ValueStateDescriptor<>("order", Order.class));
            payment = getRuntimeContext().getState(new ValueStateDescriptor<>("payment", Payment.class));
            hook = Fault.hook(getRuntimeContext());
        }

        private boolean tooFarApart(long a, long b) {
            return ttl > 0 && a != 0 && b != 0 && Math.abs(a - b) > ttl;
        }

        private void expireAt(Context ctx, long t) {
            if (ttl > 0 && t != 0) {
                ctx.timerService().registerEventTimeTimer(t + ttl + Math.max(ttl, 5000));
            }
        }

        @Override
        public void processElement1(Order o, Context ctx, Collector<PaidOrder> out) throws Exception {
            hook.record();
            Payment p = payment.value();
            if (p == null) {
                order.update(o);
                expireAt(ctx, o.eventTime);
                return;
            }
            payment.clear();
            emit(o, p, out);
        }

        @Override
        public void processElement2(Payment p, Context ctx, Collector<PaidOrder> out) throws Exception {
            hook.record();
            Order o = order.value();
            if (o == null) {
                payment.update(p);
                expireAt(ctx, p.eventTime);
                return;
            }
            order.clear();
            emit(o, p, out);
        }

        private void emit(Order o, Payment p, Collector<PaidOrder> out) {
            if (tooFarApart(o.eventTime, p.eventTime)) {
                return;
            }
            PaidOrder po = new PaidOrder();
            po.orderId = o.orderId;
            po.customer = o.customer;
            po.amountCents = p.amountCents;
            out.collect(po);
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<PaidOrder> out) throws Exception {
            long expiry = ttl + Math.max(ttl, 5000);
            Order o = order.value();
            if (o != null && o.eventTime + expiry <= ts) {
                order.clear();
            }
            Payment p = payment.value();
            if (p != null && p.eventTime + expiry <= ts) {
                payment.clear();
            }
        }
    }

    /** revenue: each customer's running total, one output record per paid order. */
    static final class RevenueTotal extends KeyedProcessFunction<String, PaidOrder, String> {
        private transient ValueState<Long> total;
        private transient Fault.Hook hook;

        @Override
        public void open(OpenContext ctx) {
            total = getRuntimeContext().getState(new ValueStateDescriptor<>("total", Long.class));
            hook = Fault.hook(getRuntimeContext());
        }

        @Override
        public void processElement(PaidOrder po, Context ctx, Collector<String> out) throws Exception {
            hook.record();
            Long t = total.value();
            long sum = (t == null ? 0 : t) + po.amountCents;
            total.update(sum);
            out.collect("{\"order_id\":\"" + po.orderId + "\",\"customer\":\"" + po.customer
                    + "\",\"amount_cents\":" + po.amountCents + ",\"customer_total_cents\":" + sum + "}");
        }
    }
}
