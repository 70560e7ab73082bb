// The model kvod serves: the one in `--model FILE`, or the embedded default built from the seeds
// (default-model.json, documented in docs/MODEL.md as the example to copy).
import ModelFile
import ObjectGraph

/// Where the served model comes from.
enum ModelSource {
    /// Loads the model file at `path`, or the embedded default when nil.
    /// - Throws: a message naming the file, the line or field, and the problem.
    static func load(path: String?) throws -> (model: Model, name: String) {
        guard let path else {
            return (try ModelFile.load(PackageResources.default_model_json, fileName: "default-model.json"), "default")
        }
        guard let data = POSIX.readFile(path) else {
            throw ModelLoadFailure(message: "\(path): cannot read the model file")
        }
        return (try ModelFile.load(data, fileName: path), path)
    }
}

/// A model that could not be loaded, with a message for people.
struct ModelLoadFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { self.message }
}
