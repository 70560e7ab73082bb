// The little language of `kvoctl -`: one stdin line becomes a raw JSON-RPC message, a request built from a command
// (`get PATH`, `set PATH VALUE`, ...), nothing (blank or `#` comment), or a usage error. Pure: no I/O here.

import WireProtocol

/// What one line of `kvoctl -` input means.
enum ScriptLine: Equatable {
    /// Nothing to send: a blank line or a `#` comment.
    case skip
    /// A JSON-RPC message to send verbatim (the line started with `{` or `[`).
    case raw(String)
    /// A request to send with the next id.
    case request(method: String, params: JSONValue?)
    /// The line is not understood; the text says why.
    case invalid(String)

    /// The commands a non-JSON line may hold, for error messages and help.
    static let usage = """
        get PATH | set PATH VALUE | subscribe PATH [new] [old] [initial] [prior] [context=JSON] | \
        unsubscribe ID | ping | hello [CLIENT] | call METHOD [PARAMS-JSON]
        """

    /// Classifies one line (without its newline; a trailing `\r` is ignored).
    init(parsing line: String) {
        let text = line.hasSuffix("\r") ? String(line.dropLast()) : line
        let trimmed = text.drop { $0 == " " || $0 == "\t" }
        if trimmed.isEmpty || trimmed.hasPrefix("#") {
            self = .skip
            return
        }
        if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") {
            self = .raw(text)
            return
        }
        var words = Words(trimmed)
        guard let command = words.next() else {
            self = .skip
            return
        }
        self = Self.command(String(command), &words)
    }

    /// Builds the request for `command` from the remaining words.
    private static func command(_ command: String, _ words: inout Words) -> ScriptLine {
        switch command {
        case "get":
            guard let path = words.next(), words.rest.isEmpty else { return .invalid("usage: get PATH") }
            return .request(method: "get", params: ["path": .string(String(path))])
        case "set":
            guard let path = words.next(), !words.rest.isEmpty else { return .invalid("usage: set PATH VALUE") }
            let value = parseJSONOrString(String(words.rest))
            return .request(method: "set", params: ["path": .string(String(path)), "value": value])
        case "subscribe":
            return Self.subscribe(&words)
        case "unsubscribe":
            guard let word = words.next(), let id = Int64(word), words.rest.isEmpty else {
                return .invalid("usage: unsubscribe ID")
            }
            return .request(method: "unsubscribe", params: ["subscription": .int(id)])
        case "ping":
            guard words.rest.isEmpty else { return .invalid("usage: ping") }
            return .request(method: "ping", params: nil)
        case "hello":
            let client = words.rest
            return .request(method: "hello", params: client.isEmpty ? [:] : ["client": .string(String(client))])
        case "call":
            guard let method = words.next() else { return .invalid("usage: call METHOD [PARAMS-JSON]") }
            if words.rest.isEmpty { return .request(method: String(method), params: nil) }
            guard let params = try? JSONParser.parse(String(words.rest)) else {
                return .invalid("call: PARAMS is not valid JSON")
            }
            return .request(method: String(method), params: params)
        default:
            return .invalid("unknown command '\(command)' (expected JSON or one of: \(Self.usage))")
        }
    }

    /// `subscribe PATH [new] [old] [initial] [prior] [context=JSON]`; the context takes the rest of the line.
    private static func subscribe(_ words: inout Words) -> ScriptLine {
        let usage = "usage: subscribe PATH [new] [old] [initial] [prior] [context=JSON]"
        guard let path = words.next() else { return .invalid(usage) }
        var params: JSONObject = ["path": .string(String(path))]
        var options: [JSONValue] = []
        while !words.rest.isEmpty {
            if words.rest.hasPrefix("context=") {
                params["context"] = parseJSONOrString(String(words.rest.dropFirst("context=".count)))
                break
            }
            guard let option = words.next(), ["new", "old", "initial", "prior"].contains(option) else {
                return .invalid(usage)
            }
            options.append(.string(String(option)))
        }
        params["options"] = .array(options)
        return .request(method: "subscribe", params: .object(params))
    }
}

/// Splits a line into blank-separated words while keeping the unsplit remainder available (for `set`'s VALUE).
private struct Words {
    /// The text not yet consumed, without leading blanks.
    private(set) var rest: Substring

    init(_ text: Substring) {
        self.rest = text
        self.skipBlanks()
    }

    /// The next word, or nil at the end.
    mutating func next() -> Substring? {
        guard !self.rest.isEmpty else { return nil }
        let end = self.rest.firstIndex { $0 == " " || $0 == "\t" } ?? self.rest.endIndex
        let word = self.rest[..<end]
        self.rest = self.rest[end...]
        self.skipBlanks()
        return word
    }

    private mutating func skipBlanks() {
        self.rest = self.rest.drop { $0 == " " || $0 == "\t" }
        while let last = self.rest.last, last == " " || last == "\t" { self.rest = self.rest.dropLast() }
    }
}
