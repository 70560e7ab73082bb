// Fuzz target: model files (docs/MODEL.md), which kvod reads at start-up. Loading any bytes must either give a
// model or a ModelFileError with a sensible position, never a trap; a model that loads must make a graph
// (`Graph(model:)`, defaults and all), and reading, describing, observing, validating and setting every key of the
// root, and of the objects its defaults create, must not trap either. Docs: docs/RELIABILITY.md.
import FuzzSupport
import ModelFile
import ObjectGraph

@main
enum FuzzModelFile {
    static let values: [Value] = [
        .null, .int(1), .double(2.5), .string(" x@y.z "), .bool(true), .array([1, "a"]), .record(Record(["k": 1])),
    ]

    static func main() {
        FuzzDriver.run { input in
            let bytes = Array(input)
            let model: Model
            switch Result(catching: { () throws(ModelFileError) in try ModelFile.load(bytes, fileName: "fuzz.json") }) {
            case .success(let loaded):
                model = loaded
            case .failure(let error):
                if let line = error.line { check(line >= 1, "line \(line)") }
                if let column = error.column { check(column >= 1, "column \(column)") }
                check(!error.description.isEmpty, "an empty error description")
                return
            }
            let graph = Graph(model: model)
            var paths: [KeyPath] = []
            for property in model.root.properties {
                let path = KeyPath(keys: [property.name])
                paths.append(path)
                if case .object? = try? graph.value(at: path), let objectClass = try? graph.objectClass(at: path) {
                    paths += objectClass.properties.map { KeyPath(keys: [property.name, $0.name]) }
                }
            }
            var observations: [ObservationID] = []
            for path in paths {
                _ = try? graph.get(path)
                if let added = try? graph.addObservation(path, options: [.new, .old, .prior, .initial], handler: { _ in }) {
                    observations.append(added.id)
                }
            }
            for path in paths {
                for value in Self.values {
                    _ = try? graph.validate(path, value)
                    let before = graph.seq
                    if (try? graph.set(path, to: value)) == nil {
                        check(graph.seq == before, "a failed set moved the seq")
                    }
                }
                _ = try? graph.mutate(path, .append([1]))
                _ = try? graph.get(path)
            }
            _ = graph.get(id: .root)
            for id in observations { try? graph.removeObservation(id) }
        }
    }
}
