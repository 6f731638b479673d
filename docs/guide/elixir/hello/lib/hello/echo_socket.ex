defmodule Hello.EchoSocket do
  # A WebSocket session: falco runs these callbacks of the
  # :falco_ws_handler behaviour in the session's process, one at a time.
  # Only handle_in/2 is required; init/1, handle_info/2 and terminate/2
  # are optional.
  @behaviour :falco_ws_handler

  # The route's handler: a GET with the handshake fields becomes a session
  # of this module, with %{count: 0} as its state; any other request gets
  # 426 from falco.
  def upgrade(_req) do
    {:websocket, __MODULE__, %{count: 0}, %{idle_timeout: 60_000}}
  end

  # Text messages come back numbered, binary ones as they are.
  @impl true
  def handle_in({:text, text}, %{count: count} = state) do
    {:reply, {:text, "echo #{count + 1}: #{text}"}, %{state | count: count + 1}}
  end

  def handle_in({:binary, _data} = message, state) do
    {:reply, message, state}
  end

  @impl true
  def terminate(_reason, _state), do: :ok
end
