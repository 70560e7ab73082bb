// Placeholder until the benchmark lands.
@main struct Bench { static func main() {} }
