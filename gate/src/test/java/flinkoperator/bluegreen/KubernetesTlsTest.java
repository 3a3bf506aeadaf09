package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyStore;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store over HTTPS, trusting the API server's CA from a PEM file as in a pod. */
class KubernetesTlsTest {
    static final char[] PASSWORD = "changeit".toCharArray();

    @TempDir static Path dir;
    static HttpsServer server;

    private static void keytool(String... args) throws Exception {
        Path keytool = Paths.get(System.getProperty("java.home"), "bin", "keytool");
        List<String> cmd = new java.util.ArrayList<>();
        cmd.add(keytool.toString());
        cmd.add("-J-XX:TieredStopAtLevel=1");
        cmd.addAll(Arrays.asList(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("keytool " + cmd + " failed: " + out);
        }
    }

    private static SSLContext serverTls(Path keystore) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(keystore)) {
            ks.load(in, PASSWORD);
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, PASSWORD);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), null, null);
        return ctx;
    }

    private static Path keyPair(String alias) throws Exception {
        Path ks = dir.resolve(alias + ".p12");
        keytool("-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", "CN=" + alias, "-ext", "san=ip:127.0.0.1", "-validity", "2",
                "-storetype", "PKCS12", "-keystore", ks.toString(),
                "-storepass", new String(PASSWORD), "-keypass", new String(PASSWORD));
        return ks;
    }

    private static Path pem(Path keystore, String alias) throws Exception {
        Path pem = dir.resolve(alias + ".crt");
        keytool("-exportcert", "-rfc", "-alias", alias, "-keystore", keystore.toString(),
                "-storepass", new String(PASSWORD), "-file", pem.toString());
        return pem;
    }

    @BeforeAll
    static void start() throws Exception {
        Path ks = keyPair("apiserver");
        server = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setHttpsConfigurator(new HttpsConfigurator(serverTls(ks)));
        server.createContext("/", ex -> {
            byte[] body = ("{\"metadata\":{\"resourceVersion\":\"3\"},\"data\":{\"stage\":\"RUNNING\"}}")
                    .getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        pem(ks, "apiserver");
        pem(keyPair("other"), "other");
    }

    @AfterAll
    static void stop() {
        server.stop(0);
    }

    private KubernetesConfigMapStore store(Path ca) throws IOException {
        URI base = URI.create("https://127.0.0.1:" + server.getAddress().getPort());
        return new KubernetesConfigMapStore(
                KubernetesConfigMapStore.httpClient(KubernetesConfigMapStore.trusting(ca)),
                base, "jobs", "cm", () -> "token");
    }

    @Test
    void trustsTheCaFromItsPemFile() throws Exception {
        assertEquals("RUNNING", store(dir.resolve("apiserver.crt")).read().get("stage"));
    }

    @Test
    void refusesAServerSignedByAnotherCa() throws Exception {
        assertThrows(IOException.class, () -> store(dir.resolve("other.crt")).read());
    }

    @Test
    void aFileWithoutCertificatesIsAClearError() throws Exception {
        Path empty = Files.writeString(dir.resolve("empty.crt"), "");
        IOException e = assertThrows(IOException.class, () -> KubernetesConfigMapStore.trusting(empty));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("no certificate"), e.getMessage());
    }
}
