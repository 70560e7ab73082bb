// Time and CPU readings for the benchmark: the monotonic nanosecond clock that stamps every published value, this
// process's CPU time, and a server's CPU time read from /proc (its threads' scheduler accounting, in nanoseconds).
// Nothing here touches a socket.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Readings of the clocks the benchmark needs.
enum Clock {
    /// Nanoseconds on `CLOCK_MONOTONIC`. Publishers and subscribers live in one process, so differences of two
    /// readings are exact latencies; the value itself means nothing across processes.
    @inline(__always)
    static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// User plus system CPU time this process has used, in nanoseconds (`getrusage`).
    static func processCPUNanoseconds() -> UInt64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func nanoseconds(_ time: timeval) -> UInt64 {
            UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000
        }
        return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
    }

    /// CPU time of process `pid` in nanoseconds: the sum of its threads' time on a CPU from
    /// `/proc/PID/task/*/schedstat` (counted in nanoseconds), else user plus system time from fields 14 and 15 of
    /// `/proc/PID/stat` (counted in clock ticks of 10 ms, too coarse for a server using a few percent of a CPU over a
    /// few seconds); nil when neither can be read (no such process, not Linux). A thread that ends during a window
    /// takes its time with it.
    static func cpuNanoseconds(ofProcess pid: Int32) -> UInt64? {
        Self.scheduledNanoseconds(ofProcess: pid) ?? Self.tickedNanoseconds(ofProcess: pid)
    }

    private static func scheduledNanoseconds(ofProcess pid: Int32) -> UInt64? {
        guard let directory = opendir("/proc/\(pid)/task") else { return nil }
        defer { closedir(directory) }
        var total: UInt64 = 0
        var threads = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let thread = Int32(name),
                let text = Self.readSmallFile("/proc/\(pid)/task/\(thread)/schedstat"),
                let first = text.split(separator: " ").first, let onCPU = UInt64(first)
            else { continue }
            total &+= onCPU
            threads += 1
        }
        return threads > 0 ? total : nil
    }

    private static func tickedNanoseconds(ofProcess pid: Int32) -> UInt64? {
        guard let text = Self.readSmallFile("/proc/\(pid)/stat") else { return nil }
        // The command name (field 2) is in parentheses and may contain spaces: split after the last ')'.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After ')' the fields start at 3 (state), so utime (14) and stime (15) are at offsets 11 and 12.
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        let ticksPerSecond = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        return (user + system) * 1_000_000_000 / ticksPerSecond
    }

    /// Reads up to 64 KiB of a file as UTF-8 text; nil when it cannot be opened.
    static func readSmallFile(_ path: String) -> String? {
        self.readFile(path, limit: 64 * 1024)
    }

    /// Reads up to 64 MiB of a file as UTF-8 text; nil when it cannot be opened.
    static func readLargeFile(_ path: String) -> String? {
        self.readFile(path, limit: 64 << 20)
    }

    private static func readFile(_ path: String, limit: Int) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64 * 1024)
        var length = 0
        while length < limit {
            if length == bytes.count {
                bytes.append(contentsOf: repeatElement(0, count: min(bytes.count, limit - length)))
            }
            let count = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + length, buffer.count - length)  // the buffer is not empty
            }
            if count <= 0 { break }
            length += count
        }
        return String(decoding: bytes[..<length], as: UTF8.self)
    }
}
