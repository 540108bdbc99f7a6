"""What each reading of the one traced pass costs per ATen op on nn.RNN (issue 34, items 2 and 3; not a test).

Times, in CPU seconds (``time.process_time``, one thread), interleaved round by round (median of 5): the forward pass,
a do-nothing dispatch mode (fused kernels off, as in the pass), and the traced pass with work only, span only, both,
the two-end paths only and all three (the perturbation check left out); prints each as a multiple of the forward and of
the do-nothing pass, and the extra microseconds per dispatched op over the do-nothing pass.

    PYTHONPATH=src python benchmarks/perop_parts.py [T d]     (default T = 1000, d = 512)
"""
import sys, time, torch, statistics
from seqlab.measure.traced_pass import TracedPass, measure_pass
from seqlab.measure.path_tracer import PathTracer
from seqlab.measure.distances import seed
from seqlab.measure.switches import reference_kernels
from torch.utils._python_dispatch import TorchDispatchMode
torch.set_num_threads(1)
class Nothing(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
T, d = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (1000, 512)
rnn=torch.nn.RNN(d,d); x=torch.randn(T,d)
def fwd():
    with torch.no_grad(): rnn(x)
def nothing():
    with torch.no_grad(), reference_kernels(), Nothing(): rnn(x)
def work(): TracedPass(work=True, span=False).run(rnn, x)
def span(): TracedPass(work=False, span=True).run(rnn, x)
def both(): TracedPass(work=True, span=True).run(rnn, x)
def paths(): measure_pass(rnn, x, sources=(0,T-1), work=False, span=False, check=False)
def allp(): measure_pass(rnn, x, sources=(0,T-1), check=False)
fs=dict(fwd=fwd,nothing=nothing,work=work,span=span,both=both,paths=paths,all=allp)
for f in fs.values(): f()
from collections import Counter
class Count(TorchDispatchMode):
    n = 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        Count.n += 1
        return func(*args, **(kwargs or {}))
with torch.no_grad(), reference_kernels(), Count(): rnn(x)
ops = Count.n
print(f'T={T} d={d} ops={ops}')
res={k:[] for k in fs}
for r in range(5):
    for k,f in fs.items():
        t=time.process_time(); f(); res[k].append(time.process_time()-t)
m={k:statistics.median(v) for k,v in res.items()}
for k,v in m.items(): print(f"{k:8s} {v*1e3:8.1f} ms  {v/m['fwd']:6.2f}x fwd  {v/m['nothing']:6.2f}x nothing  per-op extra {(v-m['nothing'])/ops*1e6:6.1f} us")
