import JotterHTTP

/// A usage mistake on the command line: printed with the command's usage, exit code 2.
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads `--name value`, `--name=value`, boolean flags and positional arguments, in the manner
/// of swift-argument-parser, with a `JOTTER_*` environment fallback for options.
package struct Arguments {
    private var remaining: [String]
    package let environment: [String: String]

    package init(_ arguments: [String], environment: [String: String]) {
        remaining = arguments
        self.environment = environment
    }

    /// True when `--help` or `-h` is anywhere among the arguments.
    package var wantsHelp: Bool { remaining.contains("--help") || remaining.contains("-h") }

    /// The value of `--name` (or its environment variable), removing it from the arguments.
    package mutating func option(_ name: String, environment key: String? = nil) throws(UsageError) -> String? {
        var found = try values(["--\(name)"]).last
        if found == nil, let key, let value = environment[key], !value.isEmpty { found = value }
        return found
    }

    /// Every value of an option that may repeat, under any of its spellings, in order:
    /// `-d a=1 --data b=2 --data=c=3` → `["a=1", "b=2", "c=3"]`.
    package mutating func values(_ spellings: [String]) throws(UsageError) -> [String] {
        var found: [String] = []
        var index = 0
        while index < remaining.count {
            let argument = remaining[index]
            if argument == "--" { break }
            if spellings.contains(argument) {
                guard index + 1 < remaining.count else { throw UsageError("\(argument) needs a value") }
                found.append(remaining[index + 1])
                remaining.removeSubrange(index...(index + 1))
            } else if let spelling = spellings.first(where: { $0.hasPrefix("--") && argument.hasPrefix($0 + "=") }) {
                found.append(String(argument.dropFirst(spelling.count + 1)))
                remaining.remove(at: index)
            } else {
                index += 1
            }
        }
        return found
    }

    /// The value of `--name` converted by `convert`, or `nil`; names the flag when it can't be.
    package mutating func option<T>(_ name: String, environment key: String? = nil, as what: String,
                            _ convert: (String) -> T?) throws(UsageError) -> T? {
        guard let text = try option(name, environment: key) else { return nil }
        guard let value = convert(text) else {
            throw UsageError("--\(name) must be \(what), not '\(text)'\(key.map { environment[$0] == text ? " (from \($0))" : "" } ?? "")")
        }
        return value
    }

    /// Whether `--name` was given (or its environment variable is `1`/`true`/`yes`).
    package mutating func flag(_ name: String, environment key: String? = nil) -> Bool {
        if let index = remaining.firstIndex(of: "--\(name)") {
            remaining.remove(at: index)
            return true
        }
        if let key, let value = environment[key]?.lowercased() { return ["1", "true", "yes"].contains(value) }
        return false
    }

    /// The remaining positional arguments; any leftover `--option` is an unknown option.
    package mutating func positionals() throws(UsageError) -> [String] {
        var result: [String] = []
        var literal = false
        for argument in remaining {
            if literal { result.append(argument); continue }
            if argument == "--" { literal = true; continue }
            if argument.hasPrefix("-"), argument != "-" {
                throw UsageError("unknown option '\(argument)'")
            }
            result.append(argument)
        }
        remaining = []
        return result
    }

    /// Fails when anything is left unread.
    package mutating func finish() throws(UsageError) {
        let extra = try positionals()
        if let first = extra.first { throw UsageError("unexpected argument '\(first)'") }
    }
}

/// Parses sizes such as `1048576`, `512K`, `1MiB`, `1GB` (binary multiples).
package func parseSize(_ text: String) -> Int? {
    let lower = String(text.lowercased().trimmingASCIISpaces())
    let units: [(String, Int)] = [("gib", 1 << 30), ("gb", 1 << 30), ("g", 1 << 30), ("mib", 1 << 20), ("mb", 1 << 20), ("m", 1 << 20),
                                  ("kib", 1 << 10), ("kb", 1 << 10), ("k", 1 << 10), ("b", 1)]
    for (suffix, factor) in units where lower.hasSuffix(suffix) {
        guard let number = Int(lower.dropLast(suffix.count).trimmingASCIISpaces()), number >= 0 else { return nil }
        let (value, overflow) = number.multipliedReportingOverflow(by: factor)
        return overflow ? nil : value
    }
    return Int(lower).flatMap { $0 >= 0 ? $0 : nil }
}

extension Arguments {
    /// Exactly one positional argument, named `what` in the usage error.
    package mutating func single(_ what: String) throws(UsageError) -> String {
        let words = try positionals()
        guard let first = words.first else { throw UsageError("missing \(what)") }
        guard words.count == 1 else { throw UsageError("unexpected argument '\(words[1])'") }
        return first
    }
}
