import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

/**
 * Runs one Kafka tool's {@code main} many times in one JVM, so differential tests pay one JVM
 * start per Kafka version instead of one per command line (run by tests/harness/java.py).
 *
 * <p>Protocol, one line per request on stdin: {@code N b64(arg1) ... b64(argN)}; one line per
 * answer on the real stdout: {@code RESULT rc b64(stdout) b64(stderr)}.
 *
 * <p>Exit: Kafka tools leave through {@code Exit.exit} ({@code org.apache.kafka.common.utils} up to
 * 4.3, {@code ...utils.internals} from 4.4, set through reflection so that one source compiles
 * against every version's jars), whose procedure is replaced here by one
 * that records the first status and unwinds with an Error. ConfigCommand catches Throwable and
 * reports it before exiting again, so everything printed after the first exit is dropped: the
 * captured output is what a real process would have printed before the JVM stopped.
 */
public final class ToolBatch {
    /** An OutputStream whose target is swapped per request (System.out/err are set only once:
     * scala.Console and the log appenders capture the stream object at start-up). */
    static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();
        @Override public void write(int b) throws java.io.IOException { target.write(b); }
        @Override public void write(byte[] b, int off, int len) throws java.io.IOException { target.write(b, off, len); }
    }

    static final class ExitCalled extends Error {
        ExitCalled() { super(null, null, false, false); }
    }

    private static final ByteArrayOutputStream OUT = new ByteArrayOutputStream();
    private static final ByteArrayOutputStream ERR = new ByteArrayOutputStream();
    private static int exitStatus = -1;
    private static int outAtExit;
    private static int errAtExit;

    public static void main(String[] argv) throws Exception {
        PrintStream answers = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        Switch out = new Switch();
        Switch err = new Switch();
        System.setOut(new PrintStream(out, true, "UTF-8"));
        System.setErr(new PrintStream(err, true, "UTF-8"));
        replaceExitProcedure();
        Method main = Class.forName(argv[0]).getMethod("main", String[].class);
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = requests.readLine()) != null) {
            String[] fields = line.split(" ", -1);
            String[] args = new String[Integer.parseInt(fields[0])];
            for (int i = 0; i < args.length; i++) {
                args[i] = new String(Base64.getDecoder().decode(fields[i + 1]), StandardCharsets.UTF_8);
            }
            OUT.reset();
            ERR.reset();
            exitStatus = -1;
            out.target = OUT;
            err.target = ERR;
            int status = run(main, args);
            System.out.flush();
            System.err.flush();
            out.target = OutputStream.nullOutputStream();
            err.target = OutputStream.nullOutputStream();
            byte[] stdout = OUT.toByteArray();
            byte[] stderr = ERR.toByteArray();
            if (exitStatus >= 0) {
                stdout = Arrays.copyOf(stdout, outAtExit);
                stderr = Arrays.copyOf(stderr, errAtExit);
            }
            Base64.Encoder b64 = Base64.getEncoder();
            answers.println("RESULT " + status + " " + b64.encodeToString(stdout) + " " + b64.encodeToString(stderr));
        }
    }

    /** Every Kafka {@code Exit} class on the class path gets a procedure that records the first
     * status and unwinds. */
    private static void replaceExitProcedure() throws ReflectiveOperationException {
        boolean found = false;
        for (String name : new String[] {"org.apache.kafka.common.utils.Exit", "org.apache.kafka.common.utils.internals.Exit"}) {
            Class<?> exit;
            try {
                exit = Class.forName(name);
            } catch (ClassNotFoundException absent) {
                continue;
            }
            Class<?> procedure = Class.forName(name + "$Procedure");
            Object recorder = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure}, (proxy, method, args) -> {
                switch (method.getName()) {
                    case "hashCode": return System.identityHashCode(proxy);
                    case "equals": return proxy == args[0];
                    case "toString": return "ToolBatch exit procedure";
                    default: break;
                }
                if (exitStatus < 0) {
                    System.out.flush();
                    System.err.flush();
                    exitStatus = (Integer) args[0];
                    outAtExit = OUT.size();
                    errAtExit = ERR.size();
                }
                throw new ExitCalled();
            });
            exit.getMethod("setExitProcedure", procedure).invoke(null, recorder);
            found = true;
        }
        if (!found) {
            throw new IllegalStateException("no Kafka Exit class on the class path");
        }
    }

    /** The process exit status the tool would have had. */
    private static int run(Method main, String[] args) {
        try {
            main.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            if (!(e.getCause() instanceof ExitCalled)) {
                // An uncaught exception: the JVM prints it and exits 1.
                PrintWriter writer = new PrintWriter(System.err, true);
                writer.print("Exception in thread \"main\" ");
                e.getCause().printStackTrace(writer);
                return exitStatus >= 0 ? exitStatus : 1;
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        return exitStatus >= 0 ? exitStatus : 0;
    }
}
