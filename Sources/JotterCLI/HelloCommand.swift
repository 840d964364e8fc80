import JotterCLICore
import JotterAPI

/// `jotter hello NAME`: the server's greeting.
struct HelloCommand: AsyncCommand, ParsableArguments {
    static let name = "hello"
    static let summary = "Ask the server to say hello."
    static let about = "Prints the server's greeting for NAME (GET /hello?name=NAME): Hello NAME!"

    @Group var options: ClientOptions
    /// The words of NAME.
    @Operand(.some("NAME")) var operands: [String]

    func run(console: Console) async throws -> Int32 {
        let message = try await options.client().hello(name: operands.joined(separator: " "))
        console.out(options.json ? try ClientOptions.json(HelloMessage(message: message)) : message + "\n")
        return ExitCode.success
    }
}
