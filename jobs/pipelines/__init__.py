"""One module per registered pipeline; each exports ``JOB`` (a ``jobs.registry.PipelineJob``)
named like the module. Modules starting with ``_`` are shared helpers, not pipelines."""
