"""The live agent: the simulator's observe -> forecast -> decide -> apply loop on real cgroups.

cgroups (v1/v2 file access, detection, parent check) -> collector (live ClusterView) -> the
registered controller -> actuator (CgroupActuator, DockerActuator), on a wall clock (loop), with
its state in SQLite (store). Imports stay lazy: ``reclaim agent status`` should not pay for numba.
"""
