/* Keyboard controls for interactive plotly figures (the site and the slides).

   plotly.js draws sliders and drop-down menus in SVG: a mouse can use them, a keyboard
   cannot reach them. Under every figure that has any, this adds native controls bound
   to the same steps and buttons: a labelled <input type="range"> per slider (arrow
   keys, Home, End), a labelled <select> per drop-down menu and a group of <button>s
   per button menu. Each runs the step's own plotly command (restyle, relayout, update
   or animate) and moves plotly's drawn control along; using plotly's control moves
   the native one. The modebar's buttons are already <button>s in plotly.js 4.
   Loaded after plotly.min.js on the pages that draw a figure
   (bookkit/sphinx/plotly_js.py); tests/test_site.py drives it with the keyboard. */
(function () {
  "use strict";
  var COMMANDS = ["restyle", "relayout", "update", "animate"];

  function run(gd, method, args) {
    if (COMMANDS.indexOf(method) < 0) return Promise.resolve();
    return window.Plotly[method].apply(null, [gd].concat(args || []));
  }

  function plain(text) {
    var box = document.createElement("div");
    box.innerHTML = String(text == null ? "" : text);
    return box.textContent.replace(/\s+/g, " ").trim();
  }

  function sliderName(slider, k, count) {
    var prefix = plain((slider.currentvalue || {}).prefix).replace(/[\s:=]+$/, "");
    return prefix || plain(slider.name) || (count > 1 ? "Slider " + (k + 1) : "Slider");
  }

  function stepText(slider, step) {
    var prefix = plain((slider.currentvalue || {}).prefix);
    var label = plain(step.label != null ? step.label : step.value);
    return prefix ? prefix + " " + label : label;
  }

  function addSlider(gd, box, slider, k, count) {
    var steps = slider.steps || [];
    if (!steps.length) return;
    var id = gd.id + "-slider-" + k;
    var row = document.createElement("div");
    row.className = "plotly-keyboard__control";
    var label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = sliderName(slider, k, count);
    var input = document.createElement("input");
    input.type = "range";
    input.id = id;
    input.min = 0;
    input.max = steps.length - 1;
    input.step = 1;
    input.value = slider.active || 0;
    var output = document.createElement("output");
    output.htmlFor = id;
    function show(index) {
      var text = stepText(slider, steps[index]);
      output.textContent = text;
      input.setAttribute("aria-valuetext", text);
    }
    show(Number(input.value));
    input.addEventListener("input", function () {
      var index = Number(input.value);
      var step = steps[index];
      show(index);
      var update = {};
      update["sliders[" + k + "].active"] = index;
      run(gd, step.method, step.args).then(function () {
        return window.Plotly.relayout(gd, update);
      });
    });
    gd.on("plotly_sliderchange", function (event) {
      if (event.slider && event.slider._index === k) {
        var index = event.slider.steps.indexOf(event.step);
        if (index >= 0) {
          input.value = index;
          show(index);
        }
      }
    });
    row.append(label, input, output);
    box.append(row);
  }

  function buttonText(button, j) {
    return plain(button.label) || "Option " + (j + 1);
  }

  function menuName(menu, k, count) {
    return plain(menu.name) || (count > 1 ? "View " + (k + 1) : "View");
  }

  function choose(gd, menu, k, j) {
    var button = menu.buttons[j];
    var update = {};
    update["updatemenus[" + k + "].active"] = j;
    return run(gd, button.method, button.args).then(function () {
      return window.Plotly.relayout(gd, update);
    });
  }

  function addMenu(gd, box, menu, k, count) {
    var buttons = menu.buttons || [];
    if (!buttons.length) return;
    var row = document.createElement("div");
    row.className = "plotly-keyboard__control";
    var id = gd.id + "-menu-" + k;
    if (menu.type === "buttons") {
      row.id = id;
      row.setAttribute("role", "group");
      row.setAttribute("aria-label", menuName(menu, k, count));
      var all = buttons.map(function (button, j) {
        var element = document.createElement("button");
        element.type = "button";
        element.textContent = buttonText(button, j);
        element.setAttribute("aria-pressed", String(j === (menu.active || 0)));
        element.addEventListener("click", function () {
          choose(gd, menu, k, j);
          all.forEach(function (other, i) {
            other.setAttribute("aria-pressed", String(i === j));
          });
        });
        return element;
      });
      row.append.apply(row, all);
    } else {
      var label = document.createElement("label");
      label.htmlFor = id;
      label.textContent = menuName(menu, k, count);
      var select = document.createElement("select");
      select.id = id;
      buttons.forEach(function (button, j) {
        var option = document.createElement("option");
        option.value = j;
        option.textContent = buttonText(button, j);
        select.append(option);
      });
      select.value = menu.active || 0;
      select.addEventListener("change", function () {
        choose(gd, menu, k, Number(select.value));
      });
      gd.on("plotly_buttonclicked", function (event) {
        if (event.menu && event.menu._index === k) select.value = event.active;
      });
      row.append(label, select);
    }
    box.append(row);
  }

  // Keys used in a control stay there (reveal.js, in the slides, would turn the page).
  function keepKeys(box) {
    box.addEventListener("keydown", function (event) { event.stopPropagation(); });
  }

  function addControls(gd) {
    var layout = gd.layout || {};
    var sliders = layout.sliders || [];
    var menus = layout.updatemenus || [];
    if (gd.dataset.keyboard || !(sliders.length || menus.length)) return;
    gd.dataset.keyboard = "ready";
    var box = document.createElement("div");
    box.className = "plotly-keyboard";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Figure controls");
    sliders.forEach(function (slider, k) {
      addSlider(gd, box, slider, k, sliders.length);
    });
    menus.forEach(function (menu, k) { addMenu(gd, box, menu, k, menus.length); });
    keepKeys(box);
    var wrapper = gd.parentElement || gd;
    wrapper.insertAdjacentElement("afterend", box);
  }

  function start() {
    if (!window.Plotly) return;
    document.querySelectorAll(".plotly-graph-div").forEach(function (gd) {
      if (gd.layout) addControls(gd);
      else if (gd.on) gd.on("plotly_afterplot", function () { addControls(gd); });
    });
  }

  if (document.readyState === "complete") start();
  else window.addEventListener("load", start);
})();
