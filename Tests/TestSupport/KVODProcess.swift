// A real kvod daemon for live tests: launched from the build directory on 127.0.0.1 with an ephemeral port, ready
// once it prints `kvod listening on HOST:PORT`, stopped with SIGTERM (then SIGKILL) when the test is done.

import Foundation
public import KVOClient

/// A running kvod process listening on an ephemeral port.
public final class KVODProcess: @unchecked Sendable {
    // @unchecked: immutable after `start`; RunningCommand synchronizes itself.
    /// The host kvod listens on (as it reported it).
    public let host: String
    /// The port kvod listens on (as it reported it).
    public let port: Int
    /// The port of the metrics endpoint (`--metrics-port`), when kvod reported one.
    public let metricsPort: Int?
    /// The child process, with its captured output.
    public let command: RunningCommand

    private init(host: String, port: Int, metricsPort: Int?, command: RunningCommand) {
        self.host = host
        self.port = port
        self.metricsPort = metricsPort
        self.command = command
    }

    deinit {
        self.command.terminate()
    }

    /// Launches `kvod --host 127.0.0.1 --port 0` plus `extraArguments` and waits (at most `timeout`) for its
    /// `kvod listening on HOST:PORT` line on stdout. Unless the arguments name a model (`--model`) or
    /// `defaultModel` is true, kvod serves an empty open root (`--empty`), so protocol tests own every key.
    /// `environment` entries are added to (or override) the test's environment; `listenArguments` replaces
    /// `--host 127.0.0.1 --port 0` (give `[]` to let the environment or a config file choose, with port 0).
    /// Throws `binaryNotFound` when kvod was not built, and `kvodNotReady` (with kvod's output) when it exits or
    /// stays silent.
    public static func start(
        _ extraArguments: [String] = [], environment: [String: String]? = nil, defaultModel: Bool = false,
        listenArguments: [String] = ["--host", "127.0.0.1", "--port", "0"], timeout: Duration = .seconds(10)
    ) throws -> KVODProcess {
        let executable = try existingBinaryURL(named: "kvod")
        let model = defaultModel || extraArguments.contains("--model") || extraArguments.contains("--empty") ? [] : ["--empty"]
        let command = try RunningCommand(
            executable, listenArguments + model + extraArguments, environment: environment)
        var endpoint: (host: String, port: Int)?
        command.stdout.wait(timeout: timeout) { text in
            endpoint = Self.listeningEndpoint(in: text)
            return endpoint != nil
        }
        guard let endpoint else {
            let reason =
                command.isRunning
                ? "no 'kvod listening on HOST:PORT' line within \(OutputCollector.seconds(timeout)) s"
                : "it exited with status \(command.waitForExitStatus(timeout: .seconds(1)).map(String.init) ?? "?")"
            command.terminate()
            throw TestSupportError.kvodNotReady(reason: reason, stdout: command.stdoutText, stderr: command.stderrText)
        }
        let metricsPort = Self.listeningEndpoint(in: command.stdoutText, marker: "kvod metrics on ")?.port
        return KVODProcess(host: endpoint.host, port: endpoint.port, metricsPort: metricsPort, command: command)
    }

    /// A new client connection to this kvod; `timeout` bounds the connect and each response.
    public func client(timeout: Duration? = .seconds(5)) throws -> KVOClient {
        try KVOClient(host: self.host, port: self.port, timeout: timeout)
    }

    /// The `--host H --port P` arguments that point kvoctl at this kvod.
    public var connectionArguments: [String] { ["--host", self.host, "--port", String(self.port)] }

    /// What kvod printed on stderr so far (its log).
    public var stderrText: String { self.command.stderrText }

    /// Waits (at most `timeout`) until kvod's log (stderr) contains `text`; the log is read in the background, so a
    /// line kvod wrote before answering a request may not have reached the test yet. Returns whether it appeared.
    public func waitForLog(_ text: String, timeout: Duration = .seconds(10)) -> Bool {
        self.command.stderr.wait(timeout: timeout) { $0.contains(text) }
    }

    /// What kvod printed on stdout so far.
    public var stdoutText: String { self.command.stdoutText }

    /// True while the kvod process runs.
    public var isRunning: Bool { self.command.isRunning }

    /// Stops kvod: SIGTERM, up to 5 s to exit, then SIGKILL. Returns its exit status (128 + signal when a signal
    /// ended it). Calling it again returns the same status.
    @discardableResult
    /// SIGTERM, then SIGKILL after `grace` (a kvod still writing a snapshot or its history may need longer on a loaded
    /// machine). Returns the exit status (137 when it had to be killed).
    public func stop(grace: Duration = .seconds(5)) -> Int32 {
        self.command.terminate(grace: grace)
    }

    /// The endpoint in the first `kvod listening on HOST:PORT` line of `text` (an IPv6 host may be bracketed).
    static func listeningEndpoint(
        in text: String, marker: String = "kvod listening on "
    ) -> (host: String, port: Int)? {
        for line in text.split(separator: "\n") {
            guard let range = line.range(of: marker) else { continue }
            let address = line[range.upperBound...].trimmingCharacters(in: .whitespaces)
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...])
            else { continue }
            var host = String(address[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return (host, port)
        }
        return nil
    }
}
