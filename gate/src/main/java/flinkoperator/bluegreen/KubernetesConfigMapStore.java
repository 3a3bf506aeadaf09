package flinkoperator.bluegreen;

import java.io.IOException;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The ConfigMap through the Kubernetes API, with {@link HttpClient} and nothing else: GET to read,
 * JSON merge patch with the read resource version to write (the API server answers 409 Conflict
 * when the object changed since).
 */
final class KubernetesConfigMapStore extends VersionedConfigMapStore {
    static final String SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

    /** Supplies the bearer token for each request (null: send none). */
    interface TokenSource {
        String token() throws IOException;
    }

    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
    private static final int MAX_BODY_IN_MESSAGE = 500;

    private final HttpClient http;
    private final URI uri;
    private final String namespace;
    private final String name;
    private final TokenSource tokens;

    KubernetesConfigMapStore(
            HttpClient http, URI apiServer, String namespace, String name, TokenSource tokens) {
        this.http = http;
        String base = apiServer.toString();
        if (base.endsWith("/")) {
            base = base.substring(0, base.length() - 1);
        }
        this.uri = URI.create(base + "/api/v1/namespaces/" + namespace + "/configmaps/" + name);
        this.namespace = namespace;
        this.name = name;
        this.tokens = tokens;
    }

    /**
     * The store as seen from a pod: the API server from {@code KUBERNETES_SERVICE_HOST} and {@code
     * KUBERNETES_SERVICE_PORT}, the service account's token (read again for every request: it is
     * rotated) and CA certificate.
     */
    static KubernetesConfigMapStore inPod(String namespace, String name) throws IOException {
        String host = System.getenv("KUBERNETES_SERVICE_HOST");
        String port = System.getenv("KUBERNETES_SERVICE_PORT");
        if (host == null || host.isEmpty()) {
            throw new IOException(
                    "KUBERNETES_SERVICE_HOST is not set: the blue/green gate must run in a"
                            + " Kubernetes pod to reach the ConfigMap " + namespace + "/" + name);
        }
        if (port == null || port.isEmpty()) {
            port = "443";
        }
        if (host.indexOf(':') >= 0 && !host.startsWith("[")) {
            host = "[" + host + "]";
        }
        Path dir = Paths.get(SERVICE_ACCOUNT_DIR);
        HttpClient http = httpClient(trusting(dir.resolve("ca.crt")));
        Path tokenFile = dir.resolve("token");
        return new KubernetesConfigMapStore(
                http, URI.create("https://" + host + ":" + port), namespace, name,
                () -> fileToken(tokenFile));
    }

    /** A client for the API server, trusting what {@code tls} trusts. */
    static HttpClient httpClient(SSLContext tls) {
        return HttpClient.newBuilder()
                .sslContext(tls)
                .connectTimeout(Duration.ofSeconds(5))
                .version(HttpClient.Version.HTTP_1_1)
                .build();
    }

    static String fileToken(Path file) throws IOException {
        try {
            return new String(Files.readAllBytes(file), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            throw new IOException(
                    "cannot read the service account token " + file + ": " + e.getMessage(), e);
        }
    }

    /** An SSL context that trusts the certificates of the PEM file {@code caFile}. */
    static SSLContext trusting(Path caFile) throws IOException {
        byte[] pem;
        try {
            pem = Files.readAllBytes(caFile);
        } catch (IOException e) {
            throw new IOException("cannot read the CA certificate " + caFile + ": " + e, e);
        }
        try {
            CertificateFactory cf = CertificateFactory.getInstance("X.509");
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            int i = 0;
            for (Certificate c : cf.generateCertificates(new ByteArrayInputStream(pem))) {
                ks.setCertificateEntry("ca-" + i++, c);
            }
            if (i == 0) {
                throw new IOException("no certificate in " + caFile);
            }
            TrustManagerFactory tmf =
                    TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx;
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot use the CA certificate " + caFile + ": " + e, e);
        }
    }

    @Override
    public String describe() {
        return "ConfigMap " + namespace + "/" + name;
    }

    @Override
    protected String missingMessage() {
        return "the ConfigMap " + name + " does not exist in namespace " + namespace
                + " (the operator creates it: is this job run by a FlinkBlueGreenDeployment in"
                + " ADVANCED mode, and are bluegreen.configmap.name and kubernetes.namespace"
                + " right?)";
    }

    @Override
    protected Versioned get() throws IOException {
        HttpResponse<String> r = send(request().GET().build());
        int status = r.statusCode();
        if (status == 404) {
            return null;
        }
        if (status != 200) {
            throw failure("GET", r);
        }
        return parse(r.body());
    }

    @Override
    protected boolean patch(String resourceVersion, Map<String, String> entries)
            throws IOException {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("metadata", metadata);
        body.put("data", new LinkedHashMap<>(entries));
        HttpRequest req =
                request()
                        .header("Content-Type", "application/merge-patch+json")
                        .method(
                                "PATCH",
                                HttpRequest.BodyPublishers.ofString(
                                        Json.write(body), StandardCharsets.UTF_8))
                        .build();
        HttpResponse<String> r = send(req);
        int status = r.statusCode();
        if (status == 200 || status == 201) {
            return true;
        }
        if (status == 409 || status == 404) {
            // Changed (or deleted) since the read: the caller reads again.
            return false;
        }
        throw failure("PATCH", r);
    }

    private HttpRequest.Builder request() throws IOException {
        HttpRequest.Builder b =
                HttpRequest.newBuilder(uri)
                        .timeout(REQUEST_TIMEOUT)
                        .header("Accept", "application/json");
        String token = tokens == null ? null : tokens.token();
        if (token != null && !token.isEmpty()) {
            b.header("Authorization", "Bearer " + token);
        }
        return b;
    }

    private HttpResponse<String> send(HttpRequest req) throws IOException {
        try {
            return http.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(req.method() + " " + uri + " interrupted", e);
        } catch (IOException e) {
            throw new IOException(
                    req.method() + " " + uri + " failed: " + e.getClass().getSimpleName()
                            + (e.getMessage() == null ? "" : ": " + e.getMessage()),
                    e);
        }
    }

    private IOException failure(String method, HttpResponse<String> r) {
        int status = r.statusCode();
        if (status == 403) {
            return new IOException(
                    method + " " + uri + " answered 403 Forbidden: " + serviceAccount() + " in "
                            + namespace + " may not get/patch configmaps: grant get and patch on"
                            + " configmap " + name + " (a Role with resources: [configmaps],"
                            + " resourceNames: [" + name + "], verbs: [get, patch], bound to"
                            + " the job's service account)");
        }
        if (status == 401) {
            return new IOException(
                    method + " " + uri + " answered 401 Unauthorized: the API server did not"
                            + " accept the pod's service account token: " + bodyOf(r));
        }
        return new IOException(
                method + " " + uri + " answered HTTP " + status + ": " + bodyOf(r));
    }

    private static String bodyOf(HttpResponse<String> r) {
        String body = r.body() == null ? "" : r.body().trim();
        if (body.length() > MAX_BODY_IN_MESSAGE) {
            body = body.substring(0, MAX_BODY_IN_MESSAGE) + "...";
        }
        return body.isEmpty() ? "(empty body)" : body;
    }

    /** "the service account NAME" from the token's {@code sub}, or "the pod's service account". */
    private String serviceAccount() {
        try {
            String token = tokens == null ? null : tokens.token();
            if (token != null) {
                String[] parts = token.split("\\.");
                if (parts.length >= 2) {
                    String payload =
                            new String(
                                    Base64.getUrlDecoder().decode(parts[1]),
                                    StandardCharsets.UTF_8);
                    Object claims = Json.parse(payload);
                    if (claims instanceof Map) {
                        Object sub = ((Map<?, ?>) claims).get("sub");
                        String prefix = "system:serviceaccount:";
                        if (sub instanceof String && ((String) sub).startsWith(prefix)) {
                            String rest = ((String) sub).substring(prefix.length());
                            int colon = rest.indexOf(':');
                            return "the service account "
                                    + (colon >= 0 ? rest.substring(colon + 1) : rest);
                        }
                    }
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // Fall through to the generic wording.
        }
        return "the pod's service account";
    }

    static Versioned parse(String body) throws IOException {
        Object root;
        try {
            root = Json.parse(body);
        } catch (Json.ParseException e) {
            throw new IOException("the ConfigMap is not valid JSON: " + e.getMessage(), e);
        }
        if (!(root instanceof Map)) {
            throw new IOException("the ConfigMap is not a JSON object");
        }
        Map<?, ?> map = (Map<?, ?>) root;
        String rv = null;
        Object metadata = map.get("metadata");
        if (metadata instanceof Map) {
            Object v = ((Map<?, ?>) metadata).get("resourceVersion");
            rv = v == null ? null : String.valueOf(v);
        }
        if (rv == null) {
            throw new IOException("the ConfigMap has no metadata.resourceVersion");
        }
        Map<String, String> data = new LinkedHashMap<>();
        Object d = map.get("data");
        if (d instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) d).entrySet()) {
                if (e.getValue() != null) {
                    data.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
                }
            }
        }
        return new Versioned(rv, data);
    }
}
