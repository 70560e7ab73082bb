// Loading a model file (docs/MODEL.md): JSON text in, a checked ObjectGraph `Model` out. This file holds the entry
// point and the one place where errors get their file position; the document and its classes are read in
// ModelReader.swift, properties in PropertyReader.swift. No Foundation, no I/O: the caller reads the file.

public import ObjectGraph
import WireProtocol

/// Model files: JSON declarations of the classes of a graph (docs/MODEL.md).
public enum ModelFile {
    /// The deepest nesting of arrays and objects a model file may use.
    public static let maxDepth = 64

    /// Parses and checks a model file's text. `fileName` is used in error messages.
    /// - Throws: the first problem found, with the file position (JSON syntax) or the field at fault.
    public static func load(_ bytes: [UInt8], fileName: String) throws(ModelFileError) -> Model {
        var text = bytes
        // A UTF-8 byte order mark (some editors write one) becomes spaces, which keeps every offset where it was.
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { text.replaceSubrange(0..<3, with: [0x20, 0x20, 0x20]) }
        let document: JSONValue
        do {
            document = try JSONParser.parse(text, maxDepth: Self.maxDepth)
        } catch {
            throw Self.syntaxError(error, in: text, fileName: fileName)
        }
        let sourceMap = SourceMap(scanning: text)
        if let duplicate = sourceMap.duplicate {
            let key = duplicate.field.split(separator: ".").last.map(String.init) ?? duplicate.field
            throw ModelFileError(
                fileName: fileName, line: sourceMap.lineAndColumn(ofOffset: duplicate.offset).line,
                field: duplicate.field, message: "duplicate member '\(key)'")
        }
        do {
            var reader = ModelReader()
            return try reader.read(document)
        } catch {
            let field = error.field.isEmpty ? nil : error.field
            throw ModelFileError(
                fileName: fileName, line: field.flatMap(sourceMap.line(ofField:)), field: field, message: error.message)
        }
    }

    private static func syntaxError(_ error: WireError, in text: [UInt8], fileName: String) -> ModelFileError {
        let offset: Int?
        let message: String
        switch error {
        case .syntax(let at, let reason):
            (offset, message) = (at, "invalid JSON: \(reason)")
        case .numberOutOfRange(let at):
            (offset, message) = (at, "invalid JSON: number out of range for a 64-bit double")
        case .tooDeep(let limit):
            (offset, message) = (nil, "invalid JSON: nested deeper than \(limit) levels")
        case .lineTooLong(let limit):
            (offset, message) = (nil, "invalid JSON: line longer than \(limit) bytes")
        }
        guard let offset else { return ModelFileError(fileName: fileName, message: message) }
        let position = SourceMap.lineAndColumn(ofOffset: offset, in: text)
        return ModelFileError(fileName: fileName, line: position.line, column: position.column, message: message)
    }
}
