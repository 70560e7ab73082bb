// Background snapshots by fork, as Redis's BGSAVE: the child is a frozen copy of the parent's memory (the kernel copies
// a page only when one side writes it), so it can serialize the graph at the fork's seq while the parent's loop keeps
// mutating. Every step that waits for the disk is the child's, never the loop's: it makes the journal roll durable
// (fsyncs the rolled segment, the new journal and the directory), writes the snapshot to a temporary file of its own,
// fsyncs it, renames it over `snapshot.kvs`, fsyncs the directory and deletes the segments the snapshot covers, then
// `_exit`s. It closes every inherited descriptor (the listening socket, clients, the directory lock) and never touches
// the loop, the logger or atexit handlers; it dies with its parent (PR_SET_PDEATHSIG), so a snapshot whose kvod was
// killed is never put in place under a kvod restarted on the directory. The parent learns the outcome without
// blocking (`poll`). kvod's only other threads are libuv's pool threads, which run C code only (background fsyncs),
// so the child finds no Swift runtime lock held.
#if canImport(Glibc)
import Glibc
#endif
import SystemCall

/// A snapshot being written by a child process.
public struct SnapshotProcess: Sendable {
    /// The child's process id.
    public let pid: Int32
    /// The seq of the graph the child is writing.
    public let seq: UInt64
    /// Where the child writes before it renames the file into place.
    public let temporaryPath: String

    /// How a child ended.
    public enum Outcome: Sendable, Equatable {
        case running
        /// The snapshot is in place and durable, and the segments it covers are deleted.
        case succeeded
        /// No snapshot was put in place (the old one and the journal still hold everything); retry later.
        case failed(String)
        /// The journal roll could not be made durable (a segment or the directory could not be fsynced): as a
        /// failed journal fsync, acknowledging more would be a lie.
        case journalFailed(String)
    }

    /// The files a child works on, all decided by the parent before the fork.
    public struct Plan: Sendable {
        /// The data directory.
        public var directory: String
        /// The files the roll wrote without waiting for the disk (the segment rolled at the snapshot's seq, the new
        /// journal): fsynced first, with the directory.
        public var rolled: [String]
        /// The snapshot's final name (`snapshot.kvs`).
        public var target: String
        /// What the snapshot makes redundant, deleted once it is in place (segments at or before its seq, an
        /// older-format snapshot).
        public var covered: [String]

        public init(directory: String, rolled: [String], target: String, covered: [String]) {
            self.directory = directory
            self.rolled = rolled
            self.target = target
            self.covered = covered
        }
    }

    /// Exit statuses of the child, each naming the step that failed.
    static let failures: [Int32: String] = [
        1: "the snapshot file could not be opened",
        2: "the snapshot could not be written",
        3: "the snapshot could not be fsynced",
        4: "the snapshot could not be renamed into place",
        5: "the rolled journal could not be fsynced",
        6: "the directory could not be fsynced after the rename",
        7: "kvod ended before the snapshot process started",
    ]
    static let journalFailure: Int32 = 5

    /// Forks a child that makes `files.rolled` durable, writes `encode()`'s parts one after another, puts them in place as
    /// `files.target`, deletes `files.covered` and exits.
    /// - Parameters:
    ///   - cpus: the CPUs the child may run on (`--snapshot-cpus`, as Redis's `bgsave_cpulist`); empty: those of
    ///     kvod. A list the kernel refuses (a CPU outside the container's set) leaves the child where kvod runs.
    ///   - encode: runs in the child only, on its frozen copy of memory; the file is its parts in order.
    /// - Throws: when fork fails (the caller retries later).
    public static func start(
        files: Plan, seq: UInt64, cpus: [Int] = [], encode: () -> [[UInt8]]
    ) throws(PersistenceError) -> SnapshotProcess {
        let parent = getpid()
        let pid = fork()
        if pid < 0 { throw PersistenceError.posix("fork", files.directory) }
        if pid == 0 {
            Self.runChild(
                files: files, temporaryPath: Self.temporaryPath(directory: files.directory, pid: getpid()),
                parent: parent, cpus: cpus, encode: encode)
        }
        return SnapshotProcess(pid: pid, seq: seq, temporaryPath: Self.temporaryPath(directory: files.directory, pid: pid))
    }

    static func temporaryPath(directory: String, pid: pid_t) -> String {
        "\(directory)/snapshot-\(pid).tmp"
    }

    /// The child's whole life: never returns.
    private static func runChild(
        files: Plan, temporaryPath: String, parent: pid_t, cpus: [Int], encode: () -> [[UInt8]]
    ) -> Never {
        Self.dieWithParent()
        if getppid() != parent { _exit(7) }
        Self.closeInheritedDescriptors()
        Self.runOnly(on: cpus)
        for path in files.rolled + [files.directory] where !Self.syncPath(path) { _exit(Self.journalFailure) }
        // The loop has the CPU first: on a busy machine the snapshot takes longer, the clients do not wait.
        _ = nice(19)
        let parts = encode()
        do {
            try AtomicFile.replace(files.target, with: parts, directory: files.directory, temporary: temporaryPath)
        } catch {
            // The exit status says which stage failed (`failures`). Until the directory is on disk a power cut may
            // bring back the old snapshot: the segments are kept then too.
            switch error.stage {
            case .open, .syncDirectory: _exit(error.stage.rawValue)
            case .write, .sync, .rename: Self.abandon(temporaryPath, status: error.stage.rawValue)
            }
        }
        for path in files.covered { unlink(path) }
        _exit(0)
    }

    private static func abandon(_ temporaryPath: String, status: Int32) -> Never {
        unlink(temporaryPath)
        _exit(status)
    }

    /// Opens `path` (a file or a directory), fsyncs it and closes it; a file that is gone needs nothing.
    private static func syncPath(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 { return errno == ENOENT }
        defer { close(descriptor) }
        return fsync(descriptor) == 0
    }

    /// Asks the kernel to SIGKILL this process when its parent ends (`prctl(PR_SET_PDEATHSIG)`, looked up at run time
    /// since the Glibc module does not import the variadic `prctl`).
    private static func dieWithParent() {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") else { return }
        let setParentDeathSignal: Int32 = 1  // PR_SET_PDEATHSIG
        _ = unsafeBitCast(symbol, to: Prctl.self)(setParentDeathSignal, UInt(SIGKILL), 0, 0, 0)
    }

    /// Restricts this process to `cpus` (`sched_setaffinity`, looked up at run time: the Glibc module does not import
    /// the GNU functions); nothing when the list is empty or the kernel refuses it.
    private static func runOnly(on cpus: [Int]) {
        guard !cpus.isEmpty else { return }
        _ = Self.setAffinity(Self.cpuSet(cpus))
    }

    /// Which of `cpus` the kernel lets a snapshot child run on: a CPU outside the cgroup's cpuset (a container's
    /// `--cpuset-cpus`) is refused, and with none left the child stays where kvod runs. Found by trying: the calling
    /// thread takes `cpus` and gets its own CPUs back. Nil when the affinity calls are missing.
    public static func grantedCPUs(_ cpus: [Int]) -> [Int]? {
        guard let own = Self.affinity() else { return nil }
        defer { _ = Self.setAffinity(own) }
        guard Self.setAffinity(Self.cpuSet(cpus)) else { return [] }
        guard let granted = Self.affinity() else { return nil }
        return withUnsafeBytes(of: granted) { bits in
            (0..<bits.count * 8).filter { bits[$0 / 8] & (1 << ($0 % 8)) != 0 }
        }
    }

    /// The kernel's CPU mask of `cpus`.
    private static func cpuSet(_ cpus: [Int]) -> cpu_set_t {
        var set = cpu_set_t()
        withUnsafeMutableBytes(of: &set) { bits in
            for cpu in cpus where cpu >= 0 && cpu < bits.count * 8 { bits[cpu / 8] |= UInt8(1) << UInt8(cpu % 8) }
        }
        return set
    }

    /// `sched_setaffinity` of the calling thread; false when the kernel refuses the set.
    private static func setAffinity(_ set: cpu_set_t) -> Bool {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity") else { return false }
        typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
        return withUnsafeBytes(of: set) { bits in
            unsafeBitCast(symbol, to: SetAffinity.self)(0, bits.count, bits.baseAddress.unsafelyUnwrapped) == 0
        }
    }

    /// `sched_getaffinity` of the calling thread.
    private static func affinity() -> cpu_set_t? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_getaffinity") else { return nil }
        typealias GetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
        var set = cpu_set_t()
        let status = withUnsafeMutableBytes(of: &set) { bits in
            unsafeBitCast(symbol, to: GetAffinity.self)(0, bits.count, bits.baseAddress.unsafelyUnwrapped)
        }
        return status == 0 ? set : nil
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
        let result = SystemCall.retrying { waitpid(self.pid, &status, options) }
        if result == 0 { return .running }
        if result < 0 { return .failed("waitpid: \(String(cString: strerror(errno)))") }
        let signal = status & 0x7F
        if signal != 0 { return .failed("the snapshot process was killed by signal \(signal)") }
        let code = (status >> 8) & 0xFF
        if code == 0 { return .succeeded }
        let reason = Self.failures[code] ?? "the snapshot process exited with status \(code)"
        return code == Self.journalFailure ? .journalFailed(reason) : .failed(reason)
    }

    /// Removes the temporary file of a child that was killed before it could (nothing else refers to it).
    public func discard() {
        unlink(self.temporaryPath)
    }
}
