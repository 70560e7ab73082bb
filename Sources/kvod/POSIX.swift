// The few operating-system services kvod's executable needs — reading a whole file, the environment, writing to
// stdout and stderr — from Glibc directly. kvod links no Foundation: the runtime image stays small
// (docs/ARCHITECTURE.md#decisions).
#if canImport(Glibc)
import Glibc
#endif
import SystemCall

enum POSIX {
    /// Turns glibc's malloc fast bins off (`mallopt(M_MXFAST, 0)`, looked up at run time: malloc.h is not part of
    /// the Glibc module). Freed small blocks are then merged as they are freed, instead of all at once by the next
    /// large allocation after a mass free (docs/ARCHITECTURE.md#decisions).
    static func disableMallocFastBins() {
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "mallopt") else { return }
        let mxfast: Int32 = 1  // M_MXFAST in malloc.h
        _ = unsafeBitCast(symbol, to: Mallopt.self)(mxfast, 0)
    }

    /// The whole file at `path`, or nil when it cannot be opened or read.
    static func readFile(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return SystemCall.readToEnd(descriptor)  // nil: a directory, or an I/O error
    }

    /// The process's environment variables.
    static var environment: [String: String] {
        var variables: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return variables
    }

    /// Writes all of `bytes` to a descriptor (one write(2) where possible, so lines never interleave); gives up
    /// quietly when the descriptor is gone.
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        _ = SystemCall.writeAll(descriptor, bytes)
    }

    /// The directory part of a path ("" for a bare name), as `dirname` without its "." for bare names.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// `directory` joined with a relative `path`.
    static func join(_ directory: String, _ path: String) -> String {
        directory.hasSuffix("/") ? directory + path : directory + "/" + path
    }

    /// Replaces this process with a fresh run of the same executable and arguments (a follower restarting on the
    /// snapshot it received): every descriptor but stdin, stdout and stderr is closed across the exec. Returns only
    /// when exec failed.
    static func restartSelf() -> Int32 {
        for descriptor in 3..<Int32(1024) {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
        var arguments: [UnsafeMutablePointer<CChar>?] = CommandLine.arguments.map { strdup($0) }
        arguments.append(nil)
        execv("/proc/self/exe", &arguments)
        return errno
    }
}
