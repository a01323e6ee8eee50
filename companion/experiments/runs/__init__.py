"""Running the experiments (training, moving to larger images, the worker ``pool``, atomic
``publish``) and the commands around them. The chapters never import these: they read what the
runs wrote through their readers."""
