"""find(o, key): the first scalar, not-None value of key in a nested JSON object (depth first),
or None. Shared by the GPU scripts' summaries (graph_energy.sh, pipeline_layers.sh)."""


def find(o, key):
    if isinstance(o, dict):
        if key in o and o[key] is not None and not isinstance(o[key], (dict, list)):
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    elif isinstance(o, list):
        for v in o:
            r = find(v, key)
            if r is not None:
                return r
    return None
