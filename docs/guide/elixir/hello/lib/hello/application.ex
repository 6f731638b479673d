defmodule Hello.Application do
  use Application

  @impl true
  def start(_type, _args) do
    port = String.to_integer(System.get_env("PORT", "4000"))

    children = [
      :falco.child_spec(:hello_http, %{
        ip: {127, 0, 0, 1},
        port: port,
        routes: Hello.Router.routes(),
        middleware: [:falco_request_id]
      })
    ]

    {:ok, sup} = Supervisor.start_link(children, strategy: :one_for_one, name: Hello.Supervisor)
    {:ok, actual} = :falco.port(:hello_http)
    IO.puts("hello: listening on http://127.0.0.1:#{actual}/")
    {:ok, sup}
  end
end
