package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import flinkoperator.bluegreen.ConfigMapStore.CasResult;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The Kubernetes store against a small fake API server on the loopback address. */
class KubernetesConfigMapStoreTest {
    static final String PATH = "/api/v1/namespaces/jobs/configmaps/orders-bluegreen";

    HttpServer server;
    final Map<String, String> data = new LinkedHashMap<>();
    long resourceVersion = 7;
    boolean exists = true;
    int forcedStatus; // answer every request with this status when non-zero
    int concurrentChanges; // PATCHes before which another writer changes the map
    final List<String> patchBodies = new ArrayList<>();
    final List<String> authorizations = new ArrayList<>();
    final List<String> contentTypes = new ArrayList<>();
    String token;

    @BeforeEach
    void start() throws IOException {
        token = jwt("system:serviceaccount:jobs:flink-runner");
        data.put("transition-id", "t2");
        data.put("stage", "TRANSITIONING");
        data.put("note", "quote \" backslash \\ newline \n unicode \u00e9");
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::handle);
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    KubernetesConfigMapStore store() {
        URI base =
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
        return new KubernetesConfigMapStore(
                HttpClient.newHttpClient(), base, "jobs", "orders-bluegreen", () -> token);
    }

    static String jwt(String sub) {
        Base64.Encoder b = Base64.getUrlEncoder().withoutPadding();
        String header = b.encodeToString("{\"alg\":\"none\"}".getBytes(StandardCharsets.UTF_8));
        String payload =
                b.encodeToString(
                        ("{\"iss\":\"kubernetes\",\"sub\":\"" + sub + "\"}")
                                .getBytes(StandardCharsets.UTF_8));
        return header + "." + payload + ".sig";
    }

    private synchronized void handle(HttpExchange ex) throws IOException {
        try {
            authorizations.add(ex.getRequestHeaders().getFirst("Authorization"));
            if (!ex.getRequestURI().getPath().equals(PATH)) {
                reply(ex, 404, "{\"kind\":\"Status\",\"code\":404}");
                return;
            }
            if (forcedStatus != 0) {
                reply(ex, forcedStatus, "{\"kind\":\"Status\",\"message\":\"forced\",\"code\":"
                        + forcedStatus + "}");
                return;
            }
            if (!exists) {
                reply(ex, 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}");
                return;
            }
            switch (ex.getRequestMethod()) {
                case "GET":
                    reply(ex, 200, configMapJson());
                    return;
                case "PATCH":
                    patch(ex);
                    return;
                default:
                    reply(ex, 405, "{}");
            }
        } finally {
            ex.close();
        }
    }

    private String configMapJson() {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("name", "orders-bluegreen");
        metadata.put("namespace", "jobs");
        metadata.put("resourceVersion", Long.toString(resourceVersion));
        metadata.put("labels", Map.of("app", "orders"));
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("kind", "ConfigMap");
        root.put("apiVersion", "v1");
        root.put("metadata", metadata);
        root.put("data", new LinkedHashMap<>(data));
        return Json.write(root);
    }

    @SuppressWarnings("unchecked")
    private void patch(HttpExchange ex) throws IOException {
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        patchBodies.add(body);
        contentTypes.add(ex.getRequestHeaders().getFirst("Content-Type"));
        if (concurrentChanges > 0) {
            concurrentChanges--;
            data.put("other-writer", Integer.toString(concurrentChanges));
            resourceVersion++;
        }
        if (!"application/merge-patch+json".equals(ex.getRequestHeaders().getFirst("Content-Type"))) {
            reply(ex, 415, "{}");
            return;
        }
        Map<String, Object> patch = (Map<String, Object>) Json.parse(body);
        Map<String, Object> metadata = (Map<String, Object>) patch.get("metadata");
        Object rv = metadata == null ? null : metadata.get("resourceVersion");
        if (rv != null && !rv.equals(Long.toString(resourceVersion))) {
            reply(ex, 409, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409}");
            return;
        }
        Map<String, Object> d = (Map<String, Object>) patch.get("data");
        if (d != null) {
            for (Map.Entry<String, Object> e : d.entrySet()) {
                if (e.getValue() == null) {
                    data.remove(e.getKey());
                } else {
                    data.put(e.getKey(), (String) e.getValue());
                }
            }
        }
        resourceVersion++;
        reply(ex, 200, configMapJson());
    }

    private static void reply(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Test
    void readsTheDataWithTheBearerToken() throws IOException {
        Map<String, String> read = store().read();
        assertEquals("TRANSITIONING", read.get("stage"));
        assertEquals("quote \" backslash \\ newline \n unicode \u00e9", read.get("note"));
        assertEquals("Bearer " + token, authorizations.get(0));
    }

    @Test
    void theTokenIsReadAgainForEachRequest() throws IOException {
        KubernetesConfigMapStore s = store();
        s.read();
        token = jwt("system:serviceaccount:jobs:rotated");
        s.read();
        assertEquals("Bearer " + token, authorizations.get(1));
    }

    @Test
    void writesWithAMergePatchNamingTheReadResourceVersion() throws IOException {
        Map<String, String> entries = new LinkedHashMap<>();
        entries.put("watermark-toggle-value", "1733140000000");
        entries.put("watermark-stage", "WATERMARK_SET");
        CasResult r = store().cas("t2", "watermark-toggle-value", null, entries);
        assertTrue(r.written);
        assertEquals("1733140000000", r.value);
        assertEquals(
                "{\"metadata\":{\"resourceVersion\":\"7\"},\"data\":"
                        + "{\"watermark-toggle-value\":\"1733140000000\","
                        + "\"watermark-stage\":\"WATERMARK_SET\"}}",
                patchBodies.get(0));
        assertEquals("application/merge-patch+json", contentTypes.get(0));
        assertEquals("1733140000000", data.get("watermark-toggle-value"));
        assertEquals("WATERMARK_SET", data.get("watermark-stage"));
        assertEquals("TRANSITIONING", data.get("stage"), "the rest of the map is kept");
    }

    @Test
    void aConflictIsRetriedFromTheRead() throws IOException {
        concurrentChanges = 3;
        CasResult r =
                store().cas("t2", "watermark-stage", null,
                        Map.of("watermark-stage", "WAITING_FOR_WATERMARK"));
        assertTrue(r.written);
        assertEquals(4, patchBodies.size(), "three 409s, then the write");
        assertTrue(patchBodies.get(3).contains("\"resourceVersion\":\"10\""), patchBodies.get(3));
        assertEquals("WAITING_FOR_WATERMARK", data.get("watermark-stage"));
    }

    @Test
    void aConflictWithAnotherWriterOfTheKeyAdoptsItsValue() throws IOException {
        KubernetesConfigMapStore s = store();
        assertTrue(s.cas("t2", "watermark-toggle-value", null, Map.of("watermark-toggle-value", "5")).written);
        CasResult r = s.cas("t2", "watermark-toggle-value", null, Map.of("watermark-toggle-value", "9"));
        assertFalse(r.written);
        assertEquals("5", r.value);
        assertEquals(1, patchBodies.size());
    }

    @Test
    void aWriteForAnotherTransitionIsRefused() throws IOException {
        CasResult r = store().cas("t1", "watermark-stage", null, Map.of("watermark-stage", "X"));
        assertTrue(r.refused);
        assertTrue(patchBodies.isEmpty());
        exists = false;
        assertTrue(store().cas("t2", "watermark-stage", null, Map.of("watermark-stage", "X")).refused);
    }

    @Test
    void forbiddenSaysWhichServiceAccountNeedsWhichGrant() {
        forcedStatus = 403;
        IOException e = assertThrows(IOException.class, () -> store().read());
        String m = e.getMessage();
        assertTrue(m.contains("the service account flink-runner in jobs may not get/patch configmaps"), m);
        assertTrue(m.contains("grant get and patch on configmap orders-bluegreen"), m);
    }

    @Test
    void forbiddenWithAnOpaqueTokenNamesThePodsServiceAccount() {
        forcedStatus = 403;
        token = "opaque";
        IOException e = assertThrows(IOException.class, () -> store().read());
        assertTrue(e.getMessage().contains("the pod's service account in jobs may not get/patch"),
                e.getMessage());
    }

    @Test
    void aMissingConfigMapSaysTheOperatorCreatesIt() {
        exists = false;
        IOException e = assertThrows(IOException.class, () -> store().read());
        String m = e.getMessage();
        assertTrue(m.contains("ConfigMap orders-bluegreen does not exist in namespace jobs"), m);
        assertTrue(m.contains("FlinkBlueGreenDeployment in ADVANCED mode"), m);
    }

    @Test
    void otherErrorsCarryTheStatusAndBody() {
        forcedStatus = 500;
        IOException e = assertThrows(IOException.class, () -> store().read());
        assertTrue(e.getMessage().contains("HTTP 500"), e.getMessage());
        assertTrue(e.getMessage().contains("forced"), e.getMessage());
        forcedStatus = 403;
        assertThrows(IOException.class,
                () -> store().cas("t2", "k", null, Map.of("k", "v")));
    }

    @Test
    void anUnreachableServerIsAnIoError() {
        KubernetesConfigMapStore s = store();
        server.stop(0);
        IOException e = assertThrows(IOException.class, s::read);
        assertTrue(e.getMessage().contains("GET"), e.getMessage());
    }
}
