"""Running a sweep's trials: the worker loop (``runner``), the user's objective and its charge
(``objective``), the study's storage (``database``, ``outage``), dead workers' trials
(``heartbeat``), cloud workers (``launch``, ``bundle``), artifacts and their cleanup
(``artifacts``, ``cleanup``) and stored studies by name (``service``).

Imports the spec (``advisor.sweep.spec``) and the accounting (``advisor.sweep.accounting``).
Nothing is imported here: each module is imported where it is used.
"""
