package io.gatehouse.itests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.ops4j.pax.exam.CoreOptions.options;

import java.io.InputStream;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import javax.xml.parsers.DocumentBuilderFactory;

import io.gatehouse.api.GClass;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;
import org.osgi.framework.Bundle;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.namespace.PackageNamespace;
import org.osgi.framework.wiring.BundleCapability;
import org.osgi.framework.wiring.BundleWire;
import org.osgi.framework.wiring.BundleWiring;
import org.osgi.service.component.runtime.ServiceComponentRuntime;
import org.osgi.service.component.runtime.dto.ComponentConfigurationDTO;
import org.osgi.service.component.runtime.dto.ComponentDescriptionDTO;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Every bundle of the distribution resolves and starts, and every gclass that a Gatehouse bundle declares (a DS
 * component providing {@code io.gatehouse.api.GClass}) is registered, under a name no other registers. The only
 * Gatehouse package a bundle is wired to is the api's: the helpers of {@code io.gatehouse.support} are a private
 * copy inside each bundle that uses them, neither imported nor exported (docs/CORE.md, "The api and the support
 * package").
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class WiringIT extends ITSupport {
    static final String GCLASS = GClass.class.getName();

    @Configuration
    public Option[] config() {
        return options(base(), allGatehouseBundles(), yunoConfig("empty-yuno.json"));
    }

    @Test
    public void shouldStartEveryBundleWhenTheWholeReactorIsInstalled() {
        List<String> notActive = new ArrayList<>();
        for (Bundle b : ctx.getBundles()) {
            int expected = isFragment(b) ? Bundle.RESOLVED : Bundle.ACTIVE;
            if (b.getState() != expected) {
                notActive.add(b.getSymbolicName() + " " + b.getVersion() + " is " + stateName(b));
            }
        }
        assertTrue("bundles not started: " + notActive, notActive.isEmpty());
    }

    @Test
    public void shouldHaveEveryGatehouseBundleActiveWhenInstalledFromTheReactor() {
        for (String name : ALL_BUNDLES) {
            Bundle b = installedBundle(GROUP + "." + name);
            assertNotNull(GROUP + "." + name + " is not installed", b);
            assertEquals(GROUP + "." + name + " state", "ACTIVE", stateName(b));
        }
        assertEquals("Gatehouse bundles installed", ALL_BUNDLES.size(), gatehouseBundlesInstalled().size());
    }

    @Test
    public void shouldRegisterEveryDeclaredGClassWhenItsBundleIsActive() throws Exception {
        Map<String, String> declared = declaredGClasses();
        await("GClass services of " + declared.keySet(), 10_000, () -> gclassRefs().size() >= declared.size());

        Set<String> names = new TreeSet<>();
        Set<String> components = new TreeSet<>();
        for (ServiceReference<?> ref : gclassRefs()) {
            GClass g = (GClass) ctx.getService(ref);
            try {
                String name = g.spec().name();
                assertTrue("GClass " + name + " is registered twice", names.add(name));
                assertTrue("GClass " + name + " comes from " + ref.getBundle().getSymbolicName(),
                    ref.getBundle().getSymbolicName().startsWith(GROUP + "."));
                components.add(String.valueOf(ref.getProperty("component.name")));
            } finally {
                ctx.ungetService(ref);
            }
        }
        assertEquals("registered GClass components (declared: " + declared + ")", declared.keySet(), components);
        System.out.println("WiringIT: gclasses registered " + names);
    }

    @Test
    public void shouldLeaveNoGatehouseComponentUnsatisfiedWhenAllBundlesRun() {
        ServiceReference<ServiceComponentRuntime> ref = ctx.getServiceReference(ServiceComponentRuntime.class);
        assertNotNull("ServiceComponentRuntime", ref);
        ServiceComponentRuntime scr = ctx.getService(ref);
        try {
            Bundle[] ours = gatehouseBundlesInstalled().toArray(Bundle[]::new);
            List<String> bad = new ArrayList<>();
            for (ComponentDescriptionDTO d : scr.getComponentDescriptionDTOs(ours)) {
                if (!scr.isComponentEnabled(d) || "require".equals(d.configurationPolicy)) {
                    continue;
                }
                Collection<ComponentConfigurationDTO> configs = scr.getComponentConfigurationDTOs(d);
                for (ComponentConfigurationDTO c : configs) {
                    if (c.state == ComponentConfigurationDTO.UNSATISFIED_REFERENCE
                        || c.state == ComponentConfigurationDTO.UNSATISFIED_CONFIGURATION
                        || c.state == ComponentConfigurationDTO.FAILED_ACTIVATION) {
                        bad.add(d.name + " state=" + c.state
                            + (c.failure != null ? " failure=" + c.failure.lines().findFirst().orElse("") : ""));
                    }
                }
            }
            assertTrue("unsatisfied or failed components: " + bad, bad.isEmpty());
        } finally {
            ctx.ungetService(ref);
        }
    }

    @Test
    public void shouldWireGatehouseBundlesToTheApiOnlyAndKeepEachCopyOfTheSupportClassesPrivate() throws Exception {
        String support = "io.gatehouse.support";
        List<String> bad = new ArrayList<>();
        Map<String, Class<?>> copies = new TreeMap<>();
        for (Bundle b : gatehouseBundlesInstalled()) {
            BundleWiring w = b.adapt(BundleWiring.class);
            assertNotNull(b.getSymbolicName() + " is not resolved", w);
            for (BundleWire wire : w.getRequiredWires(PackageNamespace.PACKAGE_NAMESPACE)) {
                String pkg = (String) wire.getCapability().getAttributes().get(PackageNamespace.PACKAGE_NAMESPACE);
                String from = wire.getProvider().getBundle().getSymbolicName();
                // Gatehouse packages come from the api; kafka-link is a library bundle the Kafka output uses
                if (pkg.startsWith(GROUP + ".") && !from.equals(b.getSymbolicName())
                    && !from.equals(GROUP + ".api") && !from.equals(GROUP + ".kafka-link")) {
                    bad.add(b.getSymbolicName() + " is wired to " + pkg + " of " + from);
                }
                if (pkg.startsWith(support)) bad.add(b.getSymbolicName() + " imports " + pkg + " from " + from);
            }
            for (BundleCapability c : w.getCapabilities(PackageNamespace.PACKAGE_NAMESPACE)) {
                String pkg = (String) c.getAttributes().get(PackageNamespace.PACKAGE_NAMESPACE);
                if (pkg.startsWith(support)) bad.add(b.getSymbolicName() + " exports " + pkg);
            }
            if (b.getEntry("io/gatehouse/support/Glog.class") != null) {
                Class<?> glog = b.loadClass(support + ".Glog");
                if (glog.getClassLoader() != w.getClassLoader()) {
                    bad.add(b.getSymbolicName() + " loads its Glog from " + glog.getClassLoader());
                }
                copies.put(b.getSymbolicName(), glog);
            }
        }
        assertTrue("wiring: " + bad, bad.isEmpty());
        for (String name : List.of("core", "tcp", "tcp4h", "channel", "iogate", "qiogate", "relay", "sink")) {
            assertTrue(GROUP + "." + name + " carries no copy of " + support + ": " + copies.keySet(),
                copies.containsKey(GROUP + "." + name));
        }
        assertEquals("one Glog class per bundle: " + copies, copies.size(), new HashSet<>(copies.values()).size());
        System.out.println("WiringIT: " + support + " embedded privately in " + copies.keySet());
    }

    // --- Helpers ---

    private List<ServiceReference<?>> gclassRefs() {
        try {
            ServiceReference<?>[] refs = ctx.getAllServiceReferences(GCLASS, null);
            return refs == null ? List.of() : List.of(refs);
        } catch (org.osgi.framework.InvalidSyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** GClass component name → bundle, read from the DS descriptors of every Gatehouse bundle (not the registry). */
    private Map<String, String> declaredGClasses() throws Exception {
        Map<String, String> declared = new TreeMap<>();
        DocumentBuilderFactory dbf = DocumentBuilderFactory.newInstance();
        dbf.setNamespaceAware(true);
        for (Bundle b : gatehouseBundlesInstalled()) {
            String header = b.getHeaders().get("Service-Component");
            if (header == null || header.isBlank()) {
                continue;
            }
            for (String path : header.split(",")) {
                URL url = b.getEntry(path.trim());
                assertNotNull(b.getSymbolicName() + " lists a missing descriptor " + path, url);
                Document doc;
                try (InputStream in = url.openStream()) {
                    doc = dbf.newDocumentBuilder().parse(in);
                }
                NodeList components = doc.getElementsByTagNameNS("*", "component");
                for (int i = 0; i < components.getLength(); i++) {
                    Element comp = (Element) components.item(i);
                    if ("require".equals(comp.getAttribute("configuration-policy")) || !provides(comp, GCLASS)) {
                        continue;
                    }
                    declared.put(comp.getAttribute("name"), b.getSymbolicName());
                }
            }
        }
        return declared;
    }

    private static boolean provides(Element comp, String iface) {
        NodeList provides = comp.getElementsByTagName("provide");
        for (int i = 0; i < provides.getLength(); i++) {
            if (iface.equals(((Element) provides.item(i)).getAttribute("interface"))) {
                return true;
            }
        }
        return false;
    }

}
