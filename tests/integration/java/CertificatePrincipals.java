import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Base64;

import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

/**
 * The principal name a Kafka broker gives a client presenting each certificate, as its default
 * principal builder derives it with the default ssl.principal.mapping.rules: the subject's
 * X500Principal.getName(), through SslPrincipalMapper "DEFAULT".
 *
 * Args: certificate files (PEM or DER). Prints the JDK's specification version (17, 21, ...), then
 * one line per file: the name's UTF-8 bytes in Base64 (a name may hold any character, line breaks
 * included).
 */
public final class CertificatePrincipals {
    public static void main(String[] args) throws Exception {
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        SslPrincipalMapper mapper = SslPrincipalMapper.fromRules("DEFAULT");
        Base64.Encoder base64 = Base64.getEncoder();
        System.out.println(System.getProperty("java.specification.version"));
        for (String path : args) {
            try (InputStream in = new FileInputStream(path)) {
                X509Certificate certificate = (X509Certificate) factory.generateCertificate(in);
                String name = mapper.getName(certificate.getSubjectX500Principal().getName());
                System.out.println(base64.encodeToString(name.getBytes(StandardCharsets.UTF_8)));
            }
        }
    }
}
