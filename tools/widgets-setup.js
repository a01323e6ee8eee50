/* Settings for the ipywidgets HTML manager, on pages that show saved widgets.
 *
 * Loaded after RequireJS and before the manager (embed-amd.js); see nb_ipywidgets_js in
 * _config.yml. tools/vendor_js.py copies it next to them, into _static/vendor/.
 */
(function () {
  "use strict";
  var vendor = document.currentScript.src.replace(/[^/?#]*([?#].*)?$/, "");

  // The manager loads its icon fonts relative to its own AMD module path, which RequireJS would
  // resolve against the page (book/@jupyter-widgets/...: a 404). Point it at our copy.
  window.require.config({
    paths: { "@jupyter-widgets/html-manager/dist": vendor + "html-manager" },
  });

  // The manager typesets widget labels with MathJax 2's MathJax.Hub.Queue; the book loads
  // MathJax 3, which has no Hub. This Hub forwards to MathJax 3 once it has started (labels
  // drawn before that are typeset by MathJax's own first pass over the page).
  var hub = {
    Queue: function (job) {
      var mathjax = window.MathJax;
      var element = job && job[2];
      if (mathjax && mathjax.startup && mathjax.startup.promise && mathjax.typesetPromise) {
        mathjax.startup.promise.then(function () {
          return mathjax.typesetPromise(element ? [element] : undefined);
        });
      }
    },
  };
  // MathJax 3 (deferred, so it runs after this) takes window.MathJax as its configuration and
  // replaces it with itself; startup.ready puts the Hub back on the real object.
  var config = window.MathJax || {};
  var startup = config.startup || {};
  var ready = startup.ready;
  startup.ready = function () {
    if (ready) {
      ready();
    } else {
      window.MathJax.startup.defaultReady();
    }
    window.MathJax.Hub = hub;
  };
  config.startup = startup;
  config.Hub = hub;
  window.MathJax = config;
})();
