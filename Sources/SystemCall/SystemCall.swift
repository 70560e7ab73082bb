// The one place that retries a system call interrupted by a signal (EINTR) and finishes short reads and writes, for
// the modules that make blocking POSIX calls (the client, kvoctl, kvod's executable, persistence, the snapshot
// shipper and receiver). UVLoop's calls go through libuv, which retries itself. Glibc only.
#if canImport(Glibc)
import Glibc
#endif

/// EINTR-retrying system calls.
public enum SystemCall {
    /// Makes `call` again while it fails with EINTR; returns its result (on failure, `errno` is the call's).
    public static func retrying<Result: BinaryInteger>(_ call: () -> Result) -> Result {
        while true {
            let result = call()
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }

    /// Writes all of `bytes` to `descriptor` (one write(2) where the descriptor takes it all, so lines from several
    /// writers never interleave). Returns 0, or the errno of the write that failed (EIO when one wrote nothing).
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard var next = bytes.baseAddress else { return 0 }
        var left = bytes.count
        while left > 0 {
            let count = Self.retrying { write(descriptor, next, left) }
            if count < 0 { return errno }
            if count == 0 { return EIO }
            next += count
            left -= count
        }
        return 0
    }

    /// `writeAll` of an array.
    public static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBytes { Self.writeAll(descriptor, $0) }
    }

    /// Reads into `buffer` until it is full or the file ends, from the current offset or (pread) from `offset`.
    /// Returns the count read, or -errno.
    public static func readFully(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int? = nil)
        -> Int
    {
        guard let base = buffer.baseAddress else { return 0 }
        var filled = 0
        while filled < buffer.count {
            let count = Self.retrying {
                if let offset { return pread(descriptor, base + filled, buffer.count - filled, off_t(offset + filled)) }
                return read(descriptor, base + filled, buffer.count - filled)
            }
            if count < 0 { return -Int(errno) }
            if count == 0 { break }
            filled += count
        }
        return filled
    }

    /// Everything `descriptor` holds until its end, or nil on a read error (a directory, an I/O error).
    public static func readToEnd(_ descriptor: Int32, sizeHint: Int = 1 << 16) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: max(sizeHint, 1) + 1)
        var filled = 0
        while true {
            if filled == bytes.count { bytes.append(contentsOf: repeatElement(0, count: max(bytes.count, 1 << 16))) }
            let count = bytes.withUnsafeMutableBytes { raw in
                Self.retrying { read(descriptor, raw.baseAddress! + filled, raw.count - filled) }
            }
            if count < 0 { return nil }
            if count == 0 { break }
            filled += count
        }
        bytes.removeSubrange(filled...)
        return bytes
    }
}
