// The errors TestSupport throws: missing binaries, processes that fail to start or to finish in time. Each message
// carries what a developer needs to see in a failed test report (paths searched, captured output).

/// Why a TestSupport helper failed.
public enum TestSupportError: Error, CustomStringConvertible {
    /// No executable `name` in any of the `searched` directories (was it built?).
    case binaryNotFound(name: String, searched: [String])
    /// The process could not be launched.
    case launchFailed(command: String, reason: String)
    /// kvod did not print its `kvod listening on HOST:PORT` line in time (or exited first).
    case kvodNotReady(reason: String, stdout: String, stderr: String)
    /// A command did not finish in time and was killed; the output is what it printed until then.
    case commandTimedOut(command: String, seconds: Double, stdout: String, stderr: String)
    /// A helper command (openssl) failed; the text says which and why.
    case commandFailed(String)

    /// A multi-line explanation including captured output.
    public var description: String {
        switch self {
        case .binaryNotFound(let name, let searched):
            "executable '\(name)' not found (build it first, e.g. `swift build`); searched: "
                + searched.joined(separator: ", ")
        case .launchFailed(let command, let reason):
            "cannot launch \(command): \(reason)"
        case .kvodNotReady(let reason, let stdout, let stderr):
            "kvod did not become ready: \(reason)\n--- kvod stdout ---\n\(stdout)\n--- kvod stderr ---\n\(stderr)"
        case .commandTimedOut(let command, let seconds, let stdout, let stderr):
            "\(command) did not finish within \(seconds) s and was killed\n--- stdout ---\n\(stdout)\n"
                + "--- stderr ---\n\(stderr)"
        case .commandFailed(let what):
            what
        }
    }
}
