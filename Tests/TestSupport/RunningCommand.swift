// Running a command as a child process with its stdout and stderr captured in the background: `RunningCommand` for
// processes a test keeps running (kvod, `kvoctl watch`), `runCommand` for the run-to-completion case. Every wait is
// bounded; a command that overstays is killed and reported with what it printed.

public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a finished command ended and what it printed.
public struct CommandResult: Sendable, CustomStringConvertible {
    /// The exit status, or 128 + the signal number when a signal ended the process (as shells report it).
    public var status: Int32
    /// Everything written to stdout.
    public var stdout: String
    /// Everything written to stderr.
    public var stderr: String

    /// The stdout lines, without empty ones (a trailing newline gives no extra line).
    public var stdoutLines: [String] {
        self.stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// The status and both outputs, for test failure messages.
    public var description: String {
        "status \(self.status)\n--- stdout ---\n\(self.stdout)\n--- stderr ---\n\(self.stderr)"
    }
}

/// A child process whose stdout and stderr are drained into memory while it runs. Releasing it kills the child.
public final class RunningCommand: @unchecked Sendable {
    // @unchecked: `exitStatus` is guarded by `exitCondition`; the rest is immutable after init.
    /// The underlying process.
    public let process: Process
    /// The command line, for messages.
    public let commandLine: String
    /// The child's stdout as read so far.
    public let stdout: OutputCollector
    /// The child's stderr as read so far.
    public let stderr: OutputCollector

    private let exitCondition = NSCondition()
    private var exitStatus: Int32?

    /// Launches `executable` with `arguments`. `stdin` (if any) is written on a background thread and then closed; a
    /// nil `stdin` gives the child an empty stdin. `environment` entries are added to (or override) this process's
    /// environment.
    public init(
        _ executable: URL, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil
    ) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        let inputPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        process.standardInput = inputPipe
        self.process = process
        self.commandLine = ([executable.path] + arguments).joined(separator: " ")
        self.stdout = OutputCollector(outputPipe.fileHandleForReading)
        self.stderr = OutputCollector(errorPipe.fileHandleForReading)
        process.terminationHandler = { [exitCondition, weak self] process in
            let status =
                process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
            exitCondition.withLock {
                self?.exitStatus = status
                exitCondition.broadcast()
            }
        }
        do {
            // posix_spawn hands the calling thread's signal mask to the child, and test threads (dispatch workers)
            // block most signals: without this, kvod would start with SIGTERM blocked and ignore `terminate()`.
            try withEmptySignalMask { try process.run() }
        } catch {
            throw TestSupportError.launchFailed(command: self.commandLine, reason: "\(error)")
        }
        // Our copies of the child's ends: closing them lets the collectors see end of stream when the child exits.
        try? outputPipe.fileHandleForWriting.close()
        try? errorPipe.fileHandleForWriting.close()
        try? inputPipe.fileHandleForReading.close()
        let input = inputPipe.fileHandleForWriting
        let data = Data((stdin ?? "").utf8)
        Thread.detachNewThread {
            // A child that exits without reading gives EPIPE here, which is fine: SIGPIPE is blocked on this thread
            // only (ignoring it process-wide would be inherited by every child launched later).
            blockSIGPIPEOnThisThread()
            input.writeIgnoringErrors(data)
            try? input.close()
        }
    }

    deinit {
        // A command nobody holds any more must not outlive the test that started it.
        self.send(signal: SIGKILL)
    }

    /// True until the child has exited (and been reaped).
    public var isRunning: Bool {
        self.exitCondition.withLock { self.exitStatus == nil }
    }

    /// The process id.
    public var pid: Int32 { self.process.processIdentifier }

    /// What the child printed on stdout so far.
    public var stdoutText: String { self.stdout.text }

    /// What the child printed on stderr so far.
    public var stderrText: String { self.stderr.text }

    /// Sends `signal` to the child if it is still running.
    public func send(signal: Int32) {
        if self.isRunning { _ = kill(self.pid, signal) }
    }

    /// Waits up to `timeout` for the child to exit; returns its status (see `CommandResult.status`), or nil if it is
    /// still running.
    public func waitForExitStatus(timeout: Duration) -> Int32? {
        let deadline = Date().addingTimeInterval(OutputCollector.seconds(timeout))
        self.exitCondition.lock()
        defer { self.exitCondition.unlock() }
        while self.exitStatus == nil {
            if !self.exitCondition.wait(until: deadline) { break }
        }
        return self.exitStatus
    }

    /// Waits up to `timeout` for the child to exit and returns its result. If it does not exit in time it is sent
    /// SIGTERM, then SIGKILL, and `TestSupportError.commandTimedOut` is thrown with the output so far.
    public func waitForExit(timeout: Duration) throws -> CommandResult {
        guard let status = self.waitForExitStatus(timeout: timeout) else {
            _ = self.terminate()
            throw TestSupportError.commandTimedOut(
                command: self.commandLine, seconds: OutputCollector.seconds(timeout), stdout: self.stdoutText,
                stderr: self.stderrText)
        }
        return self.result(status: status)
    }

    /// Stops the child: SIGTERM, up to `grace` to exit, then SIGKILL. Returns its status (see
    /// `CommandResult.status`). Harmless when it already exited.
    @discardableResult
    public func terminate(grace: Duration = .seconds(5)) -> Int32 {
        self.send(signal: SIGTERM)
        if let status = self.waitForExitStatus(timeout: grace) { return status }
        self.send(signal: SIGKILL)
        return self.waitForExitStatus(timeout: .seconds(10)) ?? 128 + SIGKILL
    }

    /// The result once the child exited: waits briefly for the output pipes to drain (a grandchild that inherited
    /// them could keep them open, so this does not wait for end of stream forever).
    private func result(status: Int32) -> CommandResult {
        self.stdout.waitForEnd(timeout: .seconds(2))
        self.stderr.waitForEnd(timeout: .seconds(2))
        return CommandResult(status: status, stdout: self.stdoutText, stderr: self.stderrText)
    }
}

/// Runs `executable` with `arguments` to completion (at most `timeout`) and returns its status and output. `stdin`
/// is written and then closed; `environment` entries are added to this process's environment. A command that does
/// not finish in time is killed and `TestSupportError.commandTimedOut` is thrown.
public func runCommand(
    _ executable: URL, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil,
    timeout: Duration = .seconds(30)
) throws -> CommandResult {
    try RunningCommand(executable, arguments, stdin: stdin, environment: environment).waitForExit(timeout: timeout)
}

extension FileHandle {
    /// Writes `data` with write(2), retrying short writes and EINTR, stopping quietly at the first error (e.g. EPIPE
    /// once the reader is gone).
    fileprivate func writeIgnoringErrors(_ data: Data) {
        let descriptor = self.fileDescriptor
        data.withUnsafeBytes { raw in
            var written = 0
            while written < raw.count {
                let count = writeSome(descriptor, raw.baseAddress! + written, raw.count - written)
                if count > 0 {
                    written += count
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}

/// One write(2) call (a free function, so it is not shadowed by FileHandle's own `write`).
private func writeSome(_ descriptor: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, pointer, count)
}

/// Runs `body` with no signal blocked on the current thread, then restores the thread's mask.
private func withEmptySignalMask<Result>(_ body: () throws -> Result) rethrows -> Result {
    var empty = sigset_t()
    var saved = sigset_t()
    sigemptyset(&empty)
    pthread_sigmask(SIG_SETMASK, &empty, &saved)
    defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
    return try body()
}

/// Blocks SIGPIPE for the current thread, so a write to a closed pipe fails with EPIPE instead of killing the process.
private func blockSIGPIPEOnThisThread() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &set, nil)
}
