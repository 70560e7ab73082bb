// `kvod-bench codec`: decodes one request line N times as the server does for every line it receives (a plain set with
// RPCMessage.decodePlainSet, anything else with RPCMessage.decode) and prints the time per line. No sockets and no loop, so it repeats exactly: run it under callgrind with
// two counts and divide the difference in instructions by the difference in counts to get instructions per line.

import ArgumentParser
import WireProtocol

/// The `codec` subcommand.
struct Codec: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode one request line N times, as the server does, and print ns/line.",
        discussion: """
            Each iteration decodes the line and releases the result, as the server does per received line: a set \
            spelled as clients spell it with RPCMessage.decodePlainSet, anything else with RPCMessage.decode. \
            Presets: set (a typical set), subscribe (a subscribe with options) and nested (a set whose value is a \
            nested object, about the size of a notification). Instructions per line: run it under \
            `valgrind --tool=callgrind` with two counts and divide the difference in Ir by the difference in counts.
            """)

    /// The built-in lines.
    enum Preset: String, ExpressibleByArgument, CaseIterable {
        case set, subscribe, nested

        var line: String {
            switch self {
            case .set:
                #"{"jsonrpc":"2.0","id":12345,"method":"set","params":{"path":"k","value":67890}}"#
            case .subscribe:
                #"{"jsonrpc":"2.0","id":7,"method":"subscribe","params":"#
                    + #"{"path":"a.b.c","options":["new","old","prior"]}}"#
            case .nested:
                #"{"jsonrpc":"2.0","id":31,"method":"set","params":{"path":"person.address","value":"#
                    + #"{"street":"Rua Augusta 12","city":"Lisbon","zip":"1100-053","floor":3,"geo":"#
                    + #"{"lat":38.7101,"lon":-9.1366},"tags":["home","billing"],"verified":true,"note":null}}}"#
            }
        }
    }

    @Option(help: "The line to decode: \(Preset.allCases.map(\.rawValue).joined(separator: ", ")).")
    var preset: Preset = .set

    @Option(help: "Decode this line instead of a preset.")
    var line: String?

    @Option(help: "How many times to decode it.")
    var count: Int = 1_000_000

    func validate() throws {
        guard self.count > 0 else { throw ValidationError("--count must be positive") }
    }

    func run() throws {
        let bytes = Array((self.line ?? self.preset.line).utf8)
        let isPlainSet = bytes.withUnsafeBytes { RPCMessage.decodePlainSet($0) } != nil
        let kind = isPlainSet ? "plain set" : Self.describe(RPCMessage.decode(bytes))
        var requests = 0
        let start = Clock.nanoseconds()
        bytes.withUnsafeBytes { line in
            for _ in 0..<self.count {
                if RPCMessage.decodePlainSet(line, maxDepth: 64) != nil {
                    requests += 1
                } else if case .single(.request) = RPCMessage.decode(line, maxDepth: 64) {
                    requests += 1
                }
            }
        }
        let elapsed = Clock.nanoseconds() - start
        let perLine = Double(elapsed) / Double(self.count)
        let rounded = (perLine * 10).rounded() / 10
        emit("codec: \(bytes.count)-byte line (\(kind)), \(self.count) decodes: \(rounded) ns/line\n")
        if requests != 0 && requests != self.count { throw ExitCode(1) }  // cannot happen: the same line each time
    }

    /// What the line decodes to, in a few words.
    private static func describe(_ incoming: RPCIncoming) -> String {
        switch incoming {
        case .single(.request(let request)): "request \(request.method)"
        case .single(.invalid(_, let error, _)): "invalid: \(error.message)"
        case .batch(let items): "batch of \(items.count)"
        case .parseError(let error): "parse error: \(error.message)"
        case .emptyBatch: "empty batch"
        }
    }
}
