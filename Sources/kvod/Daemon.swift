// The `kvod` executable: resolves the configuration (flags over KVOD_* over the config file over defaults), sets up
// logging (the only LoggingSystem.bootstrap), loads the model, and serves until SIGTERM or SIGINT (Daemon+Serve.swift).
#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import KVOServer
import ModelFile
import ObjectGraph
import Persistence

@main
struct Daemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kvod",
        abstract: "A key-value-observing server: an observable object graph over line-delimited JSON-RPC 2.0.",
        discussion: """
            kvod holds an object graph in memory and serves it over TCP, one JSON-RPC 2.0 message per line. Clients \
            get and set values by key path and subscribe to key paths with the KVO options new, old, initial and \
            prior. The protocol is described in Protocol/README.md.

            Every option below may also be set in the environment (KVOD_ and the option name in capitals, as shown) \
            or in a JSON config file (--config FILE or KVOD_CONFIG) whose keys are the long option names. A flag \
            wins over the environment, which wins over the file. Unknown keys and bad values stop kvod at start \
            with a message naming where they came from. docs/CONFIGURATION.md describes every setting.

            Access control: with --token-file or KVOD_TOKEN, clients must send hello with a token first. Tokens \
            are never given on the command line.

            On SIGTERM or SIGINT kvod sends pending output, tells clients it is closing, and exits 0. A \
            configuration error exits 64.

            Example:  kvod --port 7070    then    kvoctl watch counter --new   and   kvoctl set counter 1
            """,
        version: KVODVersion.current)

    @OptionGroup var options: DaemonOptions

    func run() throws {
        if let directory = self.options.dumpSnapshot {
            try Self.dumpSnapshot(directory)
            return
        }
        let configuration: Configuration
        do {
            configuration = try Configuration.resolve(
                options: self.options, environment: POSIX.environment)
        } catch {
            Self.fail("\(error)")
            throw ExitCode(64)
        }
        if self.options.printConfig {
            Self.announce(configuration.printable + "\n")
            return
        }
        LogSetup.bootstrap(level: configuration.logLevel, format: configuration.logFormat)
        let loaded: (model: Model, name: String)
        do {
            loaded = configuration.empty ? (Model.open, "empty") : try ModelSource.load(path: configuration.model)
        } catch {
            Self.fail("\(error)")
            throw ExitCode(1)
        }
        // ArgumentParser calls run() on the main thread, which is the loop's thread: the main actor.
        let status = MainActor.assumeIsolated {
            Self.serve(configuration, model: loaded.model, modelName: loaded.name)
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Prints the snapshot of a data directory as JSON (`--dump-snapshot`); exit 1 when there is none or it is damaged.
    static func dumpSnapshot(_ directory: String) throws {
        let snapshot: GraphSnapshot?
        do {
            snapshot = try DataDirectory.readSnapshot(path: directory)
        } catch {
            Self.fail("\(error)")
            throw ExitCode(1)
        }
        guard let snapshot else {
            Self.fail("\(directory) holds no snapshot")
            throw ExitCode(1)
        }
        Self.announce(String(decoding: SnapshotCodec.encode(snapshot), as: UTF8.self))
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
