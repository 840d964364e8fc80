import JotterCLICore
import JotterAPI

/// `jotter hello NAME`: the server's greeting.
struct HelloCommand: AsyncCommand {
    static let name = "hello"
    static let summary = "Ask the server to say hello."
    static let usage = "jotter hello NAME [options]"
    static let about = "Prints the server's greeting for NAME (GET /hello?name=NAME): Hello NAME!"
    static let options = ClientOptions.options

    let options: ClientOptions
    let name: String

    init(parsing arguments: Arguments) throws {
        options = try ClientOptions(parsing: arguments)
        let words = arguments.positionals()
        guard !words.isEmpty else { throw UsageError("missing NAME") }
        name = words.joined(separator: " ")
    }

    func run(console: Console) async throws -> Int32 {
        let message = try await options.client().hello(name: name)
        console.out(options.json ? try ClientOptions.json(HelloMessage(message: message)) : message + "\n")
        return ExitCode.success
    }
}
