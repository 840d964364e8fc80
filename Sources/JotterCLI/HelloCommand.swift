import JotterCLICore
import JotterAPI

/// `jotter hello NAME`: the server's greeting.
struct HelloCommand: ClientCommand {
    static let name = "hello"
    static let summary = "Ask the server to say hello."
    static let about = "Prints the server's greeting for NAME (GET /hello?name=NAME): Hello NAME!"
    static let operands = Operands.some("NAME")

    let options: ClientOptions
    /// The words of NAME.
    let operands: [String]

    func run(console: Console) async throws -> Int32 {
        let message = try await options.client().hello(name: operands.joined(separator: " "))
        console.out(options.json ? try ClientOptions.json(HelloMessage(message: message)) : message + "\n")
        return ExitCode.success
    }
}
