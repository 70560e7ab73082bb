// Background snapshots by fork, as Redis's BGSAVE: the child is a frozen copy of the parent's memory (the kernel copies
// a page only when one side writes it), so it can serialize the graph at the fork's seq while the parent's loop keeps
// mutating. The child closes every inherited descriptor (the listening socket, clients, the directory lock), writes
// the snapshot to a temporary file of its own, fsyncs it and `_exit`s; it never touches the loop, the logger or
// atexit handlers. The parent learns the outcome without blocking (`poll`) and only then puts the file in place
// (DataDirectory.completeSnapshot). kvod creates no threads, so fork's single-thread rule holds.
#if canImport(Glibc)
import Glibc
#endif

/// A snapshot being written by a child process.
public struct SnapshotProcess: Sendable {
    /// The child's process id.
    public let pid: Int32
    /// The seq of the graph the child is writing.
    public let seq: UInt64
    /// Where the child writes; renamed into place by the parent once the child succeeded.
    public let temporaryPath: String

    /// How a child ended.
    public enum Outcome: Sendable, Equatable {
        case running
        case succeeded
        case failed(String)
    }

    /// Exit statuses of the child, each naming the step that failed.
    static let failures: [Int32: String] = [
        1: "the snapshot file could not be opened",
        2: "the snapshot could not be written",
        3: "the snapshot could not be fsynced",
    ]

    /// Forks a child that writes `encode()`'s bytes to a temporary file in `directory` and exits.
    /// - Parameter encode: runs in the child only, on its frozen copy of memory.
    /// - Throws: when fork fails (the caller retries later).
    public static func start(
        directory: String, seq: UInt64, encode: () -> [UInt8]
    ) throws(PersistenceError) -> SnapshotProcess {
        let pid = fork()
        if pid < 0 { throw PersistenceError.posix("fork", directory) }
        if pid == 0 { Self.runChild(path: Self.temporaryPath(directory: directory, pid: getpid()), encode: encode) }
        return SnapshotProcess(pid: pid, seq: seq, temporaryPath: Self.temporaryPath(directory: directory, pid: pid))
    }

    static func temporaryPath(directory: String, pid: pid_t) -> String {
        "\(directory)/snapshot-\(pid).tmp"
    }

    /// The child's whole life: never returns.
    private static func runChild(path: String, encode: () -> [UInt8]) -> Never {
        Self.closeInheritedDescriptors()
        // The loop has the CPU first: on a busy machine the snapshot takes longer, the clients do not wait.
        _ = nice(19)
        let bytes = encode()
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if descriptor < 0 { _exit(1) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw in write(descriptor, raw.baseAddress! + written, raw.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                _exit(2)
            }
            written += count
        }
        if fsync(descriptor) != 0 { _exit(3) }
        close(descriptor)
        _exit(0)
    }

    /// Closes every descriptor but stdin, stdout and stderr, so that a child outliving a killed parent holds no
    /// socket (the port stays free for a restart) and no directory lock (a restarted kvod can take it).
    private static func closeInheritedDescriptors() {
        guard let directory = opendir("/proc/self/fd") else { return }
        let own = dirfd(directory)
        var descriptors: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let descriptor = Int32(name), descriptor > 2, descriptor != own { descriptors.append(descriptor) }
        }
        closedir(directory)
        for descriptor in descriptors { close(descriptor) }
    }

    /// The child's state, without blocking; a finished child is reaped.
    public func poll() -> Outcome {
        self.reap(options: WNOHANG)
    }

    /// Waits for the child to end (at shutdown) and reaps it.
    public func wait() -> Outcome {
        self.reap(options: 0)
    }

    private func reap(options: Int32) -> Outcome {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(self.pid, &status, options) } while result < 0 && errno == EINTR
        if result == 0 { return .running }
        if result < 0 { return .failed("waitpid: \(String(cString: strerror(errno)))") }
        let signal = status & 0x7F
        if signal != 0 { return .failed("the snapshot process was killed by signal \(signal)") }
        let code = (status >> 8) & 0xFF
        if code == 0 { return .succeeded }
        return .failed(Self.failures[code] ?? "the snapshot process exited with status \(code)")
    }

    /// Removes the temporary file of a child that failed (nothing else refers to it).
    public func discard() {
        unlink(self.temporaryPath)
    }
}
