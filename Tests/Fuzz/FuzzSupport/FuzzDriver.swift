// The entry point every fuzz target shares. Built with `-D KVOD_LIBFUZZER -sanitize=fuzzer` (.ci/fuzz.sh), `run`
// hands control to libFuzzer's driver (`LLVMFuzzerRunDriver`), which parses libFuzzer's own options. In a normal
// build (`swift build`) it replays the files and directories named on the command line instead (a seed corpus, a
// crash file), so the targets always compile and their corpora can be checked without libFuzzer.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs one fuzz target over libFuzzer's inputs, or over files in a normal build.
public enum FuzzDriver {
    /// The target's body. Set once by `run` before any input is fed; read only by the driver's single thread.
    nonisolated(unsafe) private static var body: ((UnsafeRawBufferPointer) -> Void)?

    /// Feeds inputs to `body` until libFuzzer stops (a crash, `-runs`, `-max_total_time`) and exits with its status.
    /// `body` checks its invariants with `check` or `fatalError`: a trap is what libFuzzer reports as a crash.
    public static func run(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
        Self.body = body
        #if KVOD_LIBFUZZER
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        let status = withUnsafeMutablePointer(to: &argv) { argvPointer in
            LLVMFuzzerRunDriver(&argc, argvPointer) { data, size in
                FuzzDriver.feed(UnsafeRawBufferPointer(start: data, count: size))
                return 0
            }
        }
        exit(status)
        #else
        exit(Self.replay(Array(CommandLine.arguments.dropFirst())))
        #endif
    }

    /// Feeds one input to the target's body.
    static func feed(_ input: UnsafeRawBufferPointer) {
        Self.body?(input)
    }

    /// Replays every regular file named, or found directly inside a named directory; returns the exit status.
    static func replay(_ paths: [String]) -> Int32 {
        guard !paths.isEmpty else {
            print("usage: \(CommandLine.arguments[0]) FILE-OR-DIRECTORY... (built without libFuzzer: replays inputs)")
            return 2
        }
        var count = 0
        for path in paths {
            for file in Self.files(at: path) {
                guard let bytes = Self.read(file) else {
                    print("cannot read \(file)")
                    return 1
                }
                bytes.withUnsafeBytes { Self.feed($0) }
                count += 1
            }
        }
        print("replayed \(count) inputs")
        return 0
    }

    /// The path itself when it is not a directory, else the regular files directly inside it, sorted.
    private static func files(at path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    /// The whole content of a file, or nil.
    private static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes.append(contentsOf: chunk[0..<count]) }
            if count < chunk.count { break }
        }
        return ferror(file) == 0 ? bytes : nil
    }
}

/// Traps with `message` when `condition` is false, in every build configuration (a fuzz finding must never be
/// optimised away).
@inline(never)
public func check(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition() { fatalError("fuzz invariant violated: \(message())", file: file, line: line) }
}

#if KVOD_LIBFUZZER
/// libFuzzer's per-input entry point. `-sanitize=fuzzer` links libFuzzer's own `main`, which refers to it, although
/// SwiftPM's `main` (this target's `run`) is the one that runs; it also makes the binary usable as a classic
/// libFuzzer target.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzDriver.feed(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's documented entry point for programs that keep their own `main` (LLVM's LibFuzzer docs,
/// "Using libFuzzer as a library").
// swift-format-ignore: AlwaysUseLowerCamelCase
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32
#endif
