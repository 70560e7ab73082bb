// The few POSIX file operations durability needs, each checked: open, write all, fsync, atomic replace, read all,
// and an exclusive lock on the data directory. Errors carry the call and the path.
#if canImport(Glibc)
import Glibc
#endif
import SystemCall

/// A file operation that failed.
public struct PersistenceError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }

    static func posix(_ call: String, _ path: String) -> PersistenceError {
        PersistenceError("\(call) \(path): \(String(cString: strerror(errno)))")
    }
}

/// An open file descriptor, closed on deinit.
final class FileHandle {
    let descriptor: Int32
    let path: String

    init(path: String, flags: Int32, mode: mode_t = 0o644) throws(PersistenceError) {
        let descriptor = open(path, flags | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw PersistenceError.posix("open", path) }
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(self.descriptor) }

    func writeAll(_ bytes: [UInt8]) throws(PersistenceError) {
        let failure = SystemCall.writeAll(self.descriptor, bytes)
        guard failure == 0 else {
            errno = failure
            throw PersistenceError.posix("write", self.path)
        }
    }

    func sync() throws(PersistenceError) {
        guard fsync(self.descriptor) == 0 else { throw PersistenceError.posix("fsync", self.path) }
    }

    /// `fdatasync`: the data, and of the metadata only what reading it back needs (a new size, new blocks).
    func syncData() throws(PersistenceError) {
        guard fdatasync(self.descriptor) == 0 else { throw PersistenceError.posix("fdatasync", self.path) }
    }

    func truncate(to length: Int) throws(PersistenceError) {
        guard ftruncate(self.descriptor, off_t(length)) == 0 else { throw PersistenceError.posix("ftruncate", self.path) }
        guard lseek(self.descriptor, off_t(length), SEEK_SET) >= 0 else { throw PersistenceError.posix("lseek", self.path) }
    }

    /// Opens for reading and writing, creating the file.
    static func openOrCreate(_ path: String) throws(PersistenceError) -> FileHandle {
        try FileHandle(path: path, flags: O_RDWR | O_CREAT)
    }

    /// Takes an exclusive advisory lock, trying every 10 ms for up to `waitMilliseconds` while another process
    /// holds it; then fails.
    func lockExclusively(waitMilliseconds: Int) throws(PersistenceError) {
        var waited = 0
        while flock(self.descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard waited < waitMilliseconds else {
                throw PersistenceError("\(self.path) is locked: is another kvod using this data directory?")
            }
            usleep(10_000)
            waited += 10
        }
    }
}

enum Files {
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// The whole file, or nil when it does not exist.
    static func contents(_ path: String) throws(PersistenceError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw PersistenceError.posix("open", path)
        }
        defer { close(descriptor) }
        var information = stat()
        guard fstat(descriptor, &information) == 0 else { throw PersistenceError.posix("fstat", path) }
        // Read into a buffer of the file's size (a snapshot can be hundreds of megabytes); grow if the file grew.
        var bytes = [UInt8](repeating: 0, count: max(Int(information.st_size), 0) + 1)
        var filled = 0
        while true {
            if filled == bytes.count { bytes.append(contentsOf: repeatElement(0, count: max(bytes.count, 1 << 16))) }
            let count = bytes.withUnsafeMutableBytes { raw in
                SystemCall.retrying { Glibc.read(descriptor, raw.baseAddress! + filled, raw.count - filled) }
            }
            if count < 0 { throw PersistenceError.posix("read", path) }
            if count == 0 { break }
            filled += count
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// The names in a directory (without `.` and `..`).
    static func names(in path: String) throws(PersistenceError) -> [String] {
        guard let directory = opendir(path) else { throw PersistenceError.posix("opendir", path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Replaces `path` atomically: writes `parts` one after another to a temporary file, fsyncs it, renames it over
    /// `path`, fsyncs the directory.
    static func replaceAtomically(_ path: String, with parts: [[UInt8]], directory: String) throws(PersistenceError) {
        do {
            try AtomicFile.replace(path, with: parts, directory: directory)
        } catch {
            throw error.error
        }
    }

    static func syncDirectory(_ directory: String) throws(PersistenceError) {
        let handle = try FileHandle(path: directory, flags: O_RDONLY | O_DIRECTORY)
        try handle.sync()
    }

    static func makeDirectory(_ path: String) throws(PersistenceError) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw PersistenceError.posix("mkdir", path) }
    }
}

/// Memory the allocator holds but the process no longer uses.
public enum FreedMemory {
    /// Gives freed heap memory back to the system (glibc's `malloc_trim`, looked up at run time since the Glibc module
    /// does not declare it). After loading a large snapshot, the decoded copy is freed but would otherwise stay
    /// resident, interleaved with the graph built from it.
    public static func release() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }
}
