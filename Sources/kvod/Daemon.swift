// The `kvod` executable: resolves the configuration (flags over KVOD_* over the config file over defaults), sets up
// logging (the only LoggingSystem.bootstrap), loads the model, and serves until SIGTERM or SIGINT (Daemon+Serve.swift).
#if canImport(Glibc)
import Glibc
#endif
import KVOServer
import ModelFile
import ObjectGraph
import Persistence

@main
enum Daemon {
    /// Parses the command line against the option table (DaemonOptions.swift) and exits with the run's status: 0, 1
    /// for a model or data directory kvod cannot use, 64 (EX_USAGE) for a command line or configuration it cannot.
    static func main() {
        let options = DaemonOptions.all
        let command: DaemonCommand
        do {
            command = try DaemonArguments.parse(Array(CommandLine.arguments.dropFirst()), options: options)
        } catch {
            POSIX.writeAll(Array(Help.usageError(error, options: options).utf8), to: STDERR_FILENO)
            exit(64)
        }
        switch command {
        case .help: Self.announce(Help.text(options: options))
        case .version: Self.announce(KVODVersion.current + "\n")
        case .run(let arguments): exit(Self.run(arguments))
        }
        exit(0)
    }

    /// Serves, or prints the configuration or a snapshot, as `arguments` ask; returns the exit status.
    static func run(_ arguments: DaemonArguments) -> Int32 {
        if let directory = arguments.value(of: "dump-snapshot") {
            return Self.dumpSnapshot(directory)
        }
        let configuration: Configuration
        do {
            configuration = try Configuration.resolve(arguments: arguments, environment: POSIX.environment)
        } catch {
            Self.fail("\(error)")
            return 64
        }
        if arguments.contains("print-config") {
            Self.announce(configuration.printable + "\n")
            return 0
        }
        LogSetup.bootstrap(level: configuration.logLevel, format: configuration.logFormat)
        let loaded: (model: Model, name: String)
        do {
            loaded = configuration.empty ? (Model.open, "empty") : try ModelSource.load(path: configuration.model)
        } catch {
            Self.fail("\(error)")
            return 1
        }
        // main() runs on the main thread, which is the loop's thread: the main actor.
        return MainActor.assumeIsolated {
            Self.serve(configuration, model: loaded.model, modelName: loaded.name)
        }
    }

    /// Prints the snapshot of a data directory as JSON (`--dump-snapshot`); exit 1 when there is none or it is damaged.
    static func dumpSnapshot(_ directory: String) -> Int32 {
        let snapshot: GraphSnapshot?
        do {
            snapshot = try DataDirectory.readSnapshot(path: directory)
        } catch {
            Self.fail("\(error)")
            return 1
        }
        guard let snapshot else {
            Self.fail("\(directory) holds no snapshot")
            return 1
        }
        Self.announce(String(decoding: SnapshotCodec.encode(snapshot), as: UTF8.self))
        return 0
    }

    /// Writes to standard output: the `kvod listening on` line that scripts and tests wait for, `--print-config`.
    static func announce(_ text: String) {
        POSIX.writeAll(Array(text.utf8), to: STDOUT_FILENO)
    }

    /// Writes `kvod: MESSAGE` to standard error.
    static func fail(_ message: String) {
        POSIX.writeAll(Array("kvod: \(message)\n".utf8), to: STDERR_FILENO)
    }
}
