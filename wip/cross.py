"What one step's outputs cost to cross a process boundary: pickle over ZMQ ipc vs multiprocessing.Pipe."
import multiprocessing as mp, pickle, time, zmq, statistics as st
N, STEPS = 128, 2000
def step_msg(i): return [(f"cmpl-{j:032x}-0", 1000 + (i + j) % 3000, None, None) for j in range(N)]

def zmq_child(addr_out, addr_back):
    ctx = zmq.Context(); pull = ctx.socket(zmq.PULL); pull.connect(addr_out)
    push = ctx.socket(zmq.PUSH); push.connect(addr_back)
    for _ in range(STEPS): push.send(pull.recv(copy=False), copy=False)  # echo: round trip

def pipe_child(conn):
    for _ in range(STEPS): conn.send_bytes(conn.recv_bytes())

def bench_zmq():
    ctx = zmq.Context(); push = ctx.socket(zmq.PUSH); push.bind('ipc:///tmp/i13/out')
    pull = ctx.socket(zmq.PULL); pull.bind('ipc:///tmp/i13/back')
    p = mp.Process(target=zmq_child, args=('ipc:///tmp/i13/out', 'ipc:///tmp/i13/back')); p.start()
    ts = []
    for i in range(STEPS):
        t = time.perf_counter(); push.send(pickle.dumps(step_msg(i), protocol=5)); pickle.loads(pull.recv()); ts.append(time.perf_counter() - t)
    p.join(); return ts

def bench_pipe():
    a, b = mp.Pipe(); p = mp.Process(target=pipe_child, args=(b,)); p.start()
    ts = []
    for i in range(STEPS):
        t = time.perf_counter(); a.send_bytes(pickle.dumps(step_msg(i), protocol=5)); pickle.loads(a.recv_bytes()); ts.append(time.perf_counter() - t)
    p.join(); return ts

if __name__ == '__main__':
    m = step_msg(0); b = pickle.dumps(m, protocol=5)
    t = time.perf_counter()
    for i in range(STEPS): pickle.loads(pickle.dumps(step_msg(i), protocol=5))
    print(f"message {len(b)} bytes; build+pickle+unpickle alone {1e6 * (time.perf_counter() - t) / STEPS:.0f} us")
    for name, f in (('zmq ipc', bench_zmq), ('mp.Pipe', bench_pipe)):
        ts = f()[100:]
        print(f"{name}: round trip median {1e6 * st.median(ts):.0f} us, p99 {1e6 * sorted(ts)[int(.99 * len(ts))]:.0f} us")
