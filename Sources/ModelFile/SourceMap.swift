// Where things are in a model file's text: byte offsets to line and column, and the position of every object member
// by its dotted field path, so an error about `classes.Person.properties.age.min` can name its line. Scanning also
// finds duplicate members, which the JSON parser would silently collapse. Only runs on text the parser accepted.

import WireProtocol

/// The member positions of a model file's JSON text.
struct SourceMap {
    private let bytes: [UInt8]
    /// The byte offset of each member's key (its opening quote), by dotted field path; array elements add `[n]`.
    private var memberOffsets: [String: Int] = [:]
    /// The first member whose key repeats an earlier key of the same object, if any.
    private(set) var duplicate: (field: String, offset: Int)?

    /// Scans `bytes`, which must be JSON that `JSONParser` accepted (nesting is bounded by its `maxDepth`).
    init(scanning bytes: [UInt8]) {
        self.bytes = bytes
        var index = 0
        self.scanValue(at: &index, path: "")
    }

    /// The 1-based line and column (in characters) of a byte offset.
    func lineAndColumn(ofOffset offset: Int) -> (line: Int, column: Int) {
        Self.lineAndColumn(ofOffset: offset, in: self.bytes)
    }

    /// The 1-based line and column (in characters) of a byte offset in any text, valid JSON or not.
    static func lineAndColumn(ofOffset offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        let end = min(max(offset, 0), bytes.count)
        var line = 1
        var lineStart = 0
        for position in 0..<end where bytes[position] == UInt8(ascii: "\n") {
            line += 1
            lineStart = position + 1
        }
        let column = String(decoding: bytes[lineStart..<end], as: UTF8.self).count + 1
        return (line, column)
    }

    /// The line of the member at `field`, or of its nearest enclosing member that is in the file; nil when none is.
    func line(ofField field: String) -> Int? {
        var path = Substring(field)
        while !path.isEmpty {
            if let offset = self.memberOffsets[String(path)] { return self.lineAndColumn(ofOffset: offset).line }
            guard let dot = path.lastIndex(of: ".") else { return nil }
            path = path[..<dot]
        }
        return nil
    }

    // MARK: - Scanning

    private mutating func scanValue(at index: inout Int, path: String) {
        self.skipWhitespace(at: &index)
        guard index < self.bytes.count else { return }
        switch self.bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var seen: Set<String> = []
            while true {
                self.skipWhitespace(at: &index)
                guard index < self.bytes.count, self.bytes[index] != UInt8(ascii: "}") else { break }
                let keyOffset = index
                let key = self.scanString(at: &index)
                let field = path.isEmpty ? key : "\(path).\(key)"
                if !seen.insert(key).inserted {
                    if self.duplicate == nil { self.duplicate = (field, keyOffset) }
                } else if self.memberOffsets[field] == nil {
                    self.memberOffsets[field] = keyOffset
                }
                self.skipWhitespace(at: &index)
                index += 1  // the ':'
                self.scanValue(at: &index, path: field)
                self.skipWhitespace(at: &index)
                guard index < self.bytes.count, self.bytes[index] == UInt8(ascii: ",") else { break }
                index += 1
            }
            index += 1  // the '}'
        case UInt8(ascii: "["):
            index += 1
            var element = 0
            while true {
                self.skipWhitespace(at: &index)
                guard index < self.bytes.count, self.bytes[index] != UInt8(ascii: "]") else { break }
                self.scanValue(at: &index, path: "\(path)[\(element)]")
                element += 1
                self.skipWhitespace(at: &index)
                guard index < self.bytes.count, self.bytes[index] == UInt8(ascii: ",") else { break }
                index += 1
            }
            index += 1  // the ']'
        case UInt8(ascii: "\""):
            _ = self.scanString(at: &index)
        default:
            // A number or a literal: runs to the next delimiter.
            while index < self.bytes.count, !Self.isDelimiter(self.bytes[index]) { index += 1 }
        }
    }

    /// Reads the string starting at `index` (its opening quote) and returns its decoded text.
    private func scanString(at index: inout Int) -> String {
        let start = index
        index += 1
        var hasEscapes = false
        while index < self.bytes.count, self.bytes[index] != UInt8(ascii: "\"") {
            if self.bytes[index] == UInt8(ascii: "\\") {
                hasEscapes = true
                index += 1
            }
            index += 1
        }
        index += 1  // the closing quote
        let end = min(index, self.bytes.count)
        if !hasEscapes { return String(decoding: self.bytes[(start + 1)..<max(start + 1, end - 1)], as: UTF8.self) }
        // Rare: let the parser decode the escapes of this one string.
        if case .string(let text)? = try? JSONParser.parse(Array(self.bytes[start..<end])) { return text }
        return String(decoding: self.bytes[start..<end], as: UTF8.self)
    }

    private func skipWhitespace(at index: inout Int) {
        while index < self.bytes.count, Self.isWhitespace(self.bytes[index]) { index += 1 }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
            || byte == UInt8(ascii: "\r")
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        Self.isWhitespace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
    }
}
