// The one error type of the ModelFile module: why a model file was refused, with where (file, line, column, field)
// and what. The daemon prints `description` and stops.

/// Why a model file could not be loaded.
///
/// A JSON syntax error has a `line` and `column` and no `field`. A problem with the model has the dotted `field`
/// path of the member at fault (`classes.Person.properties.age.min`) and, when the member is in the file, its
/// `line`; an expression error's message starts with the column inside the expression text.
public struct ModelFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file name given to `ModelFile.load`.
    public var fileName: String
    /// The 1-based line, when known.
    public var line: Int?
    /// The 1-based column in characters, when known (JSON syntax errors only).
    public var column: Int?
    /// The dotted path of the member at fault, for problems with the model (not for JSON syntax errors).
    public var field: String?
    /// What is wrong.
    public var message: String

    public init(fileName: String, line: Int? = nil, column: Int? = nil, field: String? = nil, message: String) {
        self.fileName = fileName
        self.line = line
        self.column = column
        self.field = field
        self.message = message
    }

    /// `default.json:12:5: invalid JSON: ...` or `model.json:7: classes.LabColor.properties.color.computed: column
    /// 14: unknown function 'foo'`.
    public var description: String {
        var location = self.fileName
        if let line = self.line {
            location += ":\(line)"
            if let column = self.column { location += ":\(column)" }
        }
        guard let field = self.field else { return "\(location): \(self.message)" }
        return "\(location): \(field): \(self.message)"
    }
}
