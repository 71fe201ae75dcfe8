package io.gatehouse.core;

import io.gatehouse.api.GObj;
import io.gatehouse.support.Glog;

import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One MBean per service, {@code io.gatehouse:type=Service,yuno=Y,name=S}, whose read-only attributes are the
 * numbers {@code /metrics} exports ({@link ServiceMetrics}), named by the gobj path with dots and the stat:
 * {@code txMsgs}, {@code input-1.rxMsgs}, {@code output-0.msgs_in_queue}, {@code connections}, ... Counters are
 * {@code Long}, gauges {@code Double}. Read on the core thread at each JMX read, without calling stats, so a JMX
 * console polling them moves no read-driven rate window (seeds/000). The set of MBeans follows the services (a
 * poll every {@value #POLL_MS} ms): a service destroyed by a hot swap loses its MBean until it is built again.
 */
public final class JmxExporter implements AutoCloseable {
    static final long POLL_MS = 2000;
    static final String DOMAIN = "io.gatehouse";

    private final YunoRuntime runtime;
    private final MBeanServer server;
    private final Map<String, ObjectName> registered = new HashMap<>();
    private ScheduledExecutorService poller;

    public JmxExporter(YunoRuntime runtime) {
        this(runtime, ManagementFactory.getPlatformMBeanServer());
    }

    JmxExporter(YunoRuntime runtime, MBeanServer server) {
        this.runtime = runtime;
        this.server = server;
    }

    public JmxExporter start() {
        refresh();
        poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gatehouse-jmx-" + runtime.yuno().name());
            t.setDaemon(true);
            return t;
        });
        poller.scheduleWithFixedDelay(this::refresh, POLL_MS, POLL_MS, TimeUnit.MILLISECONDS);
        return this;
    }

    static ObjectName name(String yuno, String service) throws JMException {
        return new ObjectName(DOMAIN + ":type=Service,yuno=" + quoteIfNeeded(yuno) + ",name=" + quoteIfNeeded(service));
    }

    private static String quoteIfNeeded(String v) {
        for (char c : v.toCharArray()) {
            if (c == ',' || c == '=' || c == ':' || c == '"' || c == '*' || c == '?' || c == '\n') return ObjectName.quote(v);
        }
        return v;
    }

    /** Registers MBeans of new services and unregisters those of services that are gone. */
    synchronized void refresh() {
        if (runtime.isClosed()) return;
        List<String> services;
        try {
            services = runtime.call(() -> {
                List<String> out = new ArrayList<>();
                for (GObj s : runtime.yuno().services()) out.add(s.name());
                return out;
            });
        } catch (RuntimeException e) {
            return;
        }
        String yuno = runtime.yuno().name();
        for (String s : services) {
            if (registered.containsKey(s)) continue;
            try {
                ObjectName on = name(yuno, s);
                if (!server.isRegistered(on)) server.registerMBean(new ServiceMBean(s), on);
                registered.put(s, on);
            } catch (JMException e) {
                Glog.warn(null, "Cannot register the service MBean", "service", s, "error", e.getMessage());
            }
        }
        registered.entrySet().removeIf(e -> {
            if (services.contains(e.getKey())) return false;
            unregister(e.getValue());
            return true;
        });
    }

    private void unregister(ObjectName on) {
        try {
            if (server.isRegistered(on)) server.unregisterMBean(on);
        } catch (JMException e) {
            Glog.warn(null, "Cannot unregister an MBean", "name", on.toString(), "error", e.getMessage());
        }
    }

    @Override
    public synchronized void close() {
        if (poller != null) poller.shutdownNow();
        registered.values().forEach(this::unregister);
        registered.clear();
    }

    /** The numbers of one service, looked up by name at each read (so a rebuilt service is read as it is now). */
    private final class ServiceMBean implements DynamicMBean {
        private final String service;

        ServiceMBean(String service) {
            this.service = service;
        }

        private Map<String, Object> values() {
            if (runtime.isClosed()) return Map.of();
            return runtime.call(() -> {
                Map<String, Object> out = new LinkedHashMap<>();
                GObj g = runtime.yuno().service(service);
                if (g == null) return out;
                for (ServiceMetrics.Sample m : ServiceMetrics.of(g)) {
                    out.putIfAbsent(m.path(), m.kind == ServiceMetrics.Kind.COUNTER ? (Object) (long) m.value : (Object) m.value);
                }
                return out;
            });
        }

        @Override
        public Object getAttribute(String attribute) throws AttributeNotFoundException {
            Object v = values().get(attribute);
            if (v == null) throw new AttributeNotFoundException(attribute + " is not a stat of " + service);
            return v;
        }

        @Override
        public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
            throw new AttributeNotFoundException("read-only: " + attribute.getName());
        }

        @Override
        public AttributeList getAttributes(String[] attributes) {
            Map<String, Object> v = values();
            AttributeList out = new AttributeList();
            for (String a : attributes) {
                if (v.containsKey(a)) out.add(new Attribute(a, v.get(a)));
            }
            return out;
        }

        @Override
        public AttributeList setAttributes(AttributeList attributes) {
            return new AttributeList();
        }

        @Override
        public Object invoke(String actionName, Object[] params, String[] signature) {
            throw new UnsupportedOperationException("no operations");
        }

        @Override
        public MBeanInfo getMBeanInfo() {
            List<MBeanAttributeInfo> attrs = new ArrayList<>();
            for (Map.Entry<String, Object> a : values().entrySet()) {
                attrs.add(new MBeanAttributeInfo(a.getKey(), a.getValue().getClass().getName(), "stat " + a.getKey(),
                        true, false, false));
            }
            return new MBeanInfo(getClass().getName(), "Stats of the Gatehouse service " + service,
                    attrs.toArray(new MBeanAttributeInfo[0]), null, null, null);
        }
    }
}
