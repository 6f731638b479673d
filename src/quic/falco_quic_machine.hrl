%% The state of one QUIC connection, shared by falco_quic_machine (events
%% in: datagrams, timers, the application's sends) and falco_quic_send
%% (packets out). Private to those two modules: the machine calls the
%% sender, never the reverse.

-type level() :: initial | handshake | application.
-type time() :: integer().

-record(q, {%% fixed at the start
            odcid :: binary(),
            scid :: binary(),
            opts :: map(),
            ours :: falco_quic_tparams:params(),
            %% the path: the client's address and its connection ID
            peer :: {inet:ip_address(), inet:port_number()},
            dcid :: binary(),
            %% a new address the client's packets come from, being
            %% validated (PATH_CHALLENGE data), RFC 9000 §9.3
            challenge = undefined :: undefined | {binary(), boolean()},
            path_responses = [] :: [binary()],
            %% TLS over CRYPTO frames, and the keys it made
            hs :: falco_quic_handshake:state(),
            phase = handshake :: handshake | established | closing | draining | closed,
            %% the 1-RTT keys once the handshake is complete (RFC 9001 §6):
            %% the key phase of the read keys and of the write keys (they
            %% differ while an update of ours waits for the client's
            %% answer), the keys of each direction, the next generation's
            %% read keys, the previous read keys (for packets of the old
            %% phase still arriving) until `prev_until', the first packet
            %% number read in the current phase, the packets sealed with
            %% the write keys and the first of them (an update of ours
            %% waits for an ACK of one, §6.5), and the packets that failed
            %% to open (§6.6's integrity limit)
            app = undefined :: undefined | #{phase := 0 | 1,
                                             read := falco_quic_keys:keys(),
                                             write := falco_quic_keys:keys(),
                                             next := falco_quic_keys:keys(),
                                             prev := falco_quic_keys:keys() | undefined,
                                             prev_until := time() | infinity,
                                             since := non_neg_integer(),
                                             write_phase := 0 | 1,
                                             sealed := non_neg_integer(),
                                             write_since := non_neg_integer(),
                                             forged := non_neg_integer(),
                                             updates := non_neg_integer()},
            %% what the client's transport parameters say (§18.2's
            %% defaults filled in), once read
            peer_params = undefined :: undefined | falco_quic_tparams:params(),
            %% packets received, per space, and our next packet numbers
            acks :: #{level() => falco_quic_ack:ack()},
            next_pn = #{initial => 0, handshake => 0, application => 0} :: #{level() => non_neg_integer()},
            loss :: falco_quic_loss:loss(),
            streams = undefined :: undefined | falco_quic_streams:streams(),
            %% when the streams' control frames were last asked for: once
            %% per flush, not per packet (falco_quic_send)
            control_at = undefined :: undefined | time(),
            %% the probes a PTO asked for, per space (RFC 9002 §6.2.4)
            probes = #{} :: #{level() => pos_integer()},
            %% RFC 9000 §8.1: bytes received from and sent to an address
            %% not yet validated (a server's 3x limit)
            validated = false :: boolean(),
            received_bytes = 0 :: non_neg_integer(),
            sent_bytes = 0 :: non_neg_integer(),
            handshake_done = false :: false | pending | sent,
            %% the NEW_TOKEN token the holder made for the client's
            %% address, sent once the handshake is complete (RFC 9000
            %% §8.1.3), again if lost
            new_token = none :: none | {pending, binary()} | sent,
            %% 1-RTT (or Handshake) packets that came before their keys
            early = [] :: [{time(), term(), falco_quic_packet:packet()}],
            %% deadlines, µs of erlang:monotonic_time
            idle_at :: time(),
            handshake_at :: time() | infinity,
            close_at = infinity :: time() | infinity,
            %% our CONNECTION_CLOSE datagram, sent again while closing,
            %% and how many packets came since (§10.2.1)
            close_packet = undefined :: undefined | iodata(),
            close_count = 0 :: non_neg_integer(),
            %% whether the close just made goes out now (within the address
            %% limit)
            close_now = false :: boolean(),
            close_reason = undefined :: term(),
            %% the client's other connection IDs (NEW_CONNECTION_ID)
            peer_cids = #{} :: #{non_neg_integer() => binary()},
            %% what the connection reports
            info = #{} :: map()}).
