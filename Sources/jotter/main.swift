import Glibc
import JotterCLI
import JotterCLICore

let arguments = Array(CommandLine.arguments.dropFirst())
// `jotter serve` becomes `jotter-server` (same process id, signals and exit code) when it is
// installed beside `jotter`, so that the server never loads the client SDK's Foundation.
if arguments.first == "serve", let server = ServeCommand.siblingServer {
    let argv = ([server] + arguments.dropFirst()).map { strdup($0) } + [nil]
    execv(server, argv)
    // Only reached when exec failed: serve from this process instead.
}
exit(JotterCommandLine.run(arguments))
